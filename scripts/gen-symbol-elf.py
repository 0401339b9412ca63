#!/usr/bin/env python3
"""Writes the fixture machines' CUDA libraries and framework modules as tiny ELF shared objects
whose dynamic symbol tables hold the symbols their report is about.

A shared object tells the loader what it needs and defines in its dynamic section (`DT_NEEDED`,
`DT_SONAME`, `DT_RUNPATH`) and its dynamic symbol table (`.dynsym`, names in `.dynstr`), with
symbol versions in `.gnu.version` (one index a symbol), `.gnu.version_d` (the version nodes it
defines: NVIDIA's libraries define one named for their soname, `libnvJitLink.so.12`) and
`.gnu.version_r` (per needed file, the nodes it needs). ld.so fails with "undefined symbol: X,
version V" when the copy it found lacks X at V (glibc elf/dl-lookup.c). These files hold only
what gpu-doctor reads: `src/parse/elf.rs` (the dynamic section, through `PT_LOAD`/`PT_DYNAMIC`)
and `src/parse/dynsym.rs` (the tables, through the section header table).

Each file below names the report it stands for. The symbol names a library needs are the ones
the report's error quotes (plus neighbours of the same API, marked modelled); which symbols the
older copy defines is modelled so that it lacks the quoted one, which the report's own error
proves of the copy the loader picked.

Layout: ELF64 little-endian header, two program headers (one `PT_LOAD` mapping the file at
address 0, `PT_DYNAMIC`), `.dynsym`, `.dynstr`, `.gnu.version`, `.gnu.version_d`,
`.gnu.version_r`, `.dynamic`, `.shstrtab`, then the section header table.

usage: scripts/gen-symbol-elf.py           writes the files
       scripts/gen-symbol-elf.py --check   fails if a file differs from what it would write
Only the Python standard library is used.
"""

import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Torch's wheel RUNPATH for libtorch_cuda.so lists the nvidia-* wheel folders (torch's
# setup.py / the wheel's `readelf -d`): the ones these fixtures hold.
TORCH_RUNPATH = ":".join(
    "$ORIGIN/../../nvidia/%s/lib" % d
    for d in ["cublas", "cuda_nvrtc", "cuda_runtime", "cudnn", "cusparse", "nccl", "nvjitlink"]
) + ":$ORIGIN"

V12 = "libnvJitLink.so.12"

# e_machine (elf.h): the fixtures' hosts are x86-64 unless a file says aarch64.
EM_X86_64, EM_AARCH64 = 62, 183


def jit(names, suffixes):
    """nvJitLink's entry points: each API name carries the release its ABI was fixed in
    (`nvJitLink.h`: `#define nvJitLinkAddData __nvJitLinkAddData_12_1`)."""
    return [("__nvJitLink%s_%s" % (n, s), V12) for s in suffixes for n in names]


JIT_API = ["AddData", "Create", "Complete", "Destroy", "GetLinkedCubin"]

# The cuSPARSE 12.1.0.106 wheel (torch 2.4.0+cu121's pin): needs nvJitLink's `_12_1` entry
# points (pytorch/pytorch#111469, infiniflow/ragflow#4466 quote `__nvJitLinkAddData_12_1`).
CUSPARSE_121 = {
    "soname": "libcusparse.so.12",
    "needed": [V12],
    "runpath": "$ORIGIN/../../nvjitlink/lib",
    "needs": [(n, V12, V12) for n, _ in jit(JIT_API, ["12_1"])],
    "defines": [("cusparseCreate", "libcusparse.so.12"), ("cusparseSpMM", "libcusparse.so.12")],
}
# The nvidia-nvjitlink-cu12 12.4.127 wheel: every release's entry points up to 12.4 (modelled).
NVJITLINK_WHEEL = {
    "soname": V12,
    "defines": jit(JIT_API, ["12_0", "12_1", "12_2", "12_3", "12_4"]),
}
# The toolkit's older nvJitLink: entry points of 12.0 only (modelled; the report's error shows
# it lacks `__nvJitLinkAddData_12_1`).
NVJITLINK_OLD = {"soname": V12, "defines": jit(JIT_API, ["12_0"])}


def torch_cuda(extra_needs):
    """torch/lib/libtorch_cuda.so of torch 2.4.0+cu121: needs cuSPARSE and NCCL (NCCL exports
    no symbol versions, so its needs are unversioned: pytorch/pytorch#119932 quotes
    `libtorch_cuda.so: undefined symbol: ncclCommRegister`)."""
    return {
        "soname": "libtorch_cuda.so",
        "needed": ["libcusparse.so.12", "libnccl.so.2"],
        "runpath": TORCH_RUNPATH,
        "needs": [("cusparseCreate", "libcusparse.so.12", "libcusparse.so.12")] + extra_needs,
        "defines": [("_ZN2at4cuda20getCurrentCUDAStreamEa", None)],
    }


TORCH_NCCL_NEEDS = [("ncclCommInitRank", None, None), ("ncclCommRegister", None, None)]

# NCCL 2.20.5 (torch 2.4.0's pin) and 2.18.1: `ncclCommRegister` came with NCCL 2.19's user
# buffer registration (NCCL 2.19.3 user guide, usage/bufferreg: "NCCL 2.19.x now supports user
# buffer registration ... Register buffer with ncclCommRegister()",
# https://docs.nvidia.com/deeplearning/nccl/archives/nccl_2193/user-guide/docs/usage/bufferreg.html).
NCCL_2205 = {
    "soname": "libnccl.so.2",
    "defines": [("ncclCommInitRank", None), ("ncclAllReduce", None), ("ncclCommRegister", None),
                ("ncclCommDeregister", None)],
}
NCCL_2181 = {
    "soname": "libnccl.so.2",
    "defines": [("ncclCommInitRank", None), ("ncclAllReduce", None)],
}

# cuBLAS 11 needs cuBLASLt's status strings at the node `libcublasLt.so.11`
# (pytorch/pytorch#103832, hcnoh/gail-pytorch#5: "undefined symbol: cublasLtGetStatusString,
# version libcublasLt.so.11"); its RUNPATH is `$ORIGIN` (pytorch/pytorch#174320).
LT11 = "libcublasLt.so.11"
CUBLAS_11 = {
    "soname": "libcublas.so.11",
    "needed": [LT11],
    "runpath": "$ORIGIN",
    "needs": [("cublasLtGetStatusString", LT11, LT11), ("cublasLtCreate", LT11, LT11)],
    "defines": [("cublasCreate_v2", "libcublas.so.11")],
}
CUBLASLT_11_WHEEL = {
    "soname": LT11,
    "defines": [("cublasLtCreate", LT11), ("cublasLtGetStatusString", LT11),
                ("cublasLtGetStatusName", LT11)],
}
# CUDA 11.3's cuBLASLt (modelled: the report's error shows it lacks cublasLtGetStatusString).
CUBLASLT_11_OLD = {"soname": LT11, "defines": [("cublasLtCreate", LT11)]}
# torch 1.13.1's libtorch_global_deps.so: needs the CUDA runtime and cuBLAS through the wheels'
# folders (modelled; torch/__init__.py `_load_global_deps` loads it first).
TORCH_113_GLOBAL_DEPS = {
    "soname": "libtorch_global_deps.so",
    "needed": ["libcublas.so.11"],
    "runpath": "$ORIGIN/../../nvidia/cublas/lib:$ORIGIN/../../nvidia/cuda_runtime/lib:$ORIGIN",
    "needs": [("cublasCreate_v2", "libcublas.so.11", "libcublas.so.11")],
}

SITE = "root/home/ubuntu/venv/lib/python3.10/site-packages"

FILES = {}


def fixture(name, files):
    for rel, spec in files.items():
        FILES["tests/fixtures/%s/%s" % (name, rel)] = spec


# infiniflow/ragflow#4466 and pytorch/pytorch#111469: a toolkit's nvJitLink on LD_LIBRARY_PATH.
fixture("torch-cusparse-nvjitlink-ld-library-path", {
    SITE + "/torch/lib/libtorch_cuda.so": torch_cuda(TORCH_NCCL_NEEDS),
    SITE + "/nvidia/cusparse/lib/libcusparse.so.12": CUSPARSE_121,
    SITE + "/nvidia/nvjitlink/lib/libnvJitLink.so.12": NVJITLINK_WHEEL,
    SITE + "/nvidia/nccl/lib/libnccl.so.2": NCCL_2205,
    "root/usr/local/cuda-12.1/targets/x86_64-linux/lib/libnvJitLink.so.12": NVJITLINK_OLD,
})
# The same machine with the wheels' copies winning: healthy.
fixture("torch-wheels-symbols-consistent", {
    SITE + "/torch/lib/libtorch_cuda.so": torch_cuda(TORCH_NCCL_NEEDS),
    SITE + "/nvidia/cusparse/lib/libcusparse.so.12": CUSPARSE_121,
    SITE + "/nvidia/nvjitlink/lib/libnvJitLink.so.12": NVJITLINK_WHEEL,
    SITE + "/nvidia/nccl/lib/libnccl.so.2": NCCL_2205,
    "root/usr/local/cuda-12.1/targets/x86_64-linux/lib/libnvJitLink.so.12": NVJITLINK_OLD,
})
# pytorch/pytorch#119932 / #119072: torch over an NCCL wheel older than 2.19.
fixture("torch-nccl-wheel-without-comm-register", {
    SITE + "/torch/lib/libtorch_cuda.so": torch_cuda(TORCH_NCCL_NEEDS),
    SITE + "/nvidia/cusparse/lib/libcusparse.so.12": CUSPARSE_121,
    SITE + "/nvidia/nvjitlink/lib/libnvJitLink.so.12": NVJITLINK_WHEEL,
    SITE + "/nvidia/nccl/lib/libnccl.so.2": NCCL_2181,
})
# pytorch/pytorch#103832: torch 1.13's cuBLAS wheel with the image's CUDA 11.3 cuBLASLt first.
fixture("torch-113-cublas-wheel-system-cublaslt", {
    SITE + "/torch/lib/libtorch_global_deps.so": TORCH_113_GLOBAL_DEPS,
    SITE + "/nvidia/cublas/lib/libcublas.so.11": CUBLAS_11,
    SITE + "/nvidia/cublas/lib/libcublasLt.so.11": CUBLASLT_11_WHEEL,
    "root/usr/local/cuda-11.3/targets/x86_64-linux/lib/libcublasLt.so.11": CUBLASLT_11_OLD,
})

# Extension packages against torch's own C++ symbols (`src/probe/python/extensions.rs`): an
# extension's compiled module needs `c10::`/`at::` symbols from torch/lib, which torch of
# another release or C++ string ABI does not define ("undefined symbol: _ZN3c10...").
# std::string is `NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE` under
# `_GLIBCXX_USE_CXX11_ABI=1` and `Ss` under the old ABI (the Itanium C++ ABI's substitution).
CXX11_STRING = "NSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"
ERROR_CTOR_CXX11 = "_ZN3c105ErrorC2ENS_14SourceLocationE" + CXX11_STRING
ERROR_CTOR_OLD = "_ZN3c105ErrorC2ENS_14SourceLocationESs"
WARNING_CTOR_CXX11 = ("_ZN3c107WarningC1ESt7variantIJNS0_11UserWarningENS0_18DeprecationWarningEEE"
                      "RKNS_14SourceLocationE" + CXX11_STRING + "b")
WARNING_CTOR_OLD = ("_ZN3c107WarningC1ESt7variantIJNS0_11UserWarningENS0_18DeprecationWarningEEE"
                    "RKNS_14SourceLocationESsb")
# Symbols every build of these releases defines and needs (modelled neighbours).
C10_COMMON = ["_ZNK3c105Error4whatEv", "_ZN3c104cuda9SetDeviceEa"]


def torch_libs(abi_symbols):
    """torch/lib's libc10.so, libtorch_cpu.so and libtorch_python.so: c10's error and warning
    constructors in the given spelling, and a few of at::'s and torch::'s (modelled)."""
    return {
        "libc10.so": {"soname": "libc10.so",
                      "defines": [(n, None) for n in C10_COMMON + abi_symbols]},
        "libtorch_cpu.so": {"soname": "libtorch_cpu.so", "needed": ["libc10.so"],
                            "defines": [("_ZN2at4_ops5empty4callEv", None)]},
        "libtorch_python.so": {"soname": "libtorch_python.so",
                               "needed": ["libc10.so", "libtorch_cpu.so"],
                               "defines": [("_ZN5torch3jit8tracer9warn_deprEv", None)]},
    }


def extension(soname, needed, torch_needs):
    """A package's compiled module: the torch libraries and CUDA runtime it links, and the
    torch symbols it needs (unversioned: torch's libraries define no version nodes)."""
    return {
        "soname": soname,
        "needed": needed,
        "needs": [(n, None, None) for n in C10_COMMON + torch_needs],
    }


FA_SO = "flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so"
FA_NEEDED = ["libc10.so", "libtorch_cpu.so", "libtorch_python.so", "libcudart.so.12"]


def torch_fixture(name, abi_symbols, ext_files, site=SITE):
    files = {site + "/torch/lib/" + lib: spec for lib, spec in torch_libs(abi_symbols).items()}
    files.update({site + "/" + rel: spec for rel, spec in ext_files.items()})
    fixture(name, files)


# Dao-AILab/flash-attention#1691: flash_attn-2.7.4.post1+cu12torch2.4cxx11abiTRUE over a torch
# of the old ABI (`undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx11...`).
torch_fixture("flash-attn-2741-cxx11abi-true-on-torch-old-abi", [ERROR_CTOR_OLD], {
    FA_SO: extension(FA_SO, FA_NEEDED, [ERROR_CTOR_CXX11]),
})
# The healthy counterpart: the extension's ABI is torch's.
torch_fixture("flash-attn-torch-symbols-match-clean", [ERROR_CTOR_OLD], {
    FA_SO: extension(FA_SO, FA_NEEDED, [ERROR_CTOR_OLD]),
})
# state-spaces/mamba#704: mamba-ssm 2.2.4's selective_scan_cuda needs c10::Warning's
# constructor in the old ABI's spelling (`...SourceLocationESsb`), which the torch here
# does not define (modelled: it defines the C++11 spelling).
MAMBA_SO = "selective_scan_cuda.cpython-310-x86_64-linux-gnu.so"
CONV_SO = "causal_conv1d_cuda.cpython-310-x86_64-linux-gnu.so"
torch_fixture("mamba-ssm-224-old-abi-selective-scan", [ERROR_CTOR_CXX11, WARNING_CTOR_CXX11], {
    MAMBA_SO: extension(MAMBA_SO, FA_NEEDED, [WARNING_CTOR_OLD]),
    CONV_SO: extension(CONV_SO, FA_NEEDED, [ERROR_CTOR_CXX11]),
})

# Packages' own kernels against the GPU (`src/diagnose/compiled.rs`, read by
# `src/parse/fatbin.rs`): a module's `.nv_fatbin` carries SASS for its build's architectures
# and, where the build keeps it, PTX. flash-attn 2's setup.py builds `arch=compute_80,code=sm_80`
# and `arch=compute_90,code=sm_90` (SASS only, no PTX: `code=sm_XX`); the architectures below are
# modelled on that, and the reports' "no kernel image is available" proves the module has no
# image the RTX 5090 (sm_120) can run.
SASS, PTX = 2, 1
FA2_FATBIN = [[(SASS, 80), (SASS, 90)]] * 3


def fa_module(so, fatbin_units):
    spec = extension(so, FA_NEEDED, [ERROR_CTOR_OLD])
    spec["fatbin"] = fatbin_units
    return spec


FA_SO_312 = "flash_attn_2_cuda.cpython-312-x86_64-linux-gnu.so"
# Dao-AILab/flash-attention#1638: flash-attn on an RTX 5090 D with torch 2.7.0+cu128, "CUDA
# error: no kernel image is available for execution on the device".
torch_fixture("flash-attn-sm80-sm90-on-rtx5090", [ERROR_CTOR_OLD], {
    FA_SO_312: fa_module(FA_SO_312, FA2_FATBIN),
}, site="root/home/bob/proj/.venv/lib/python3.12/site-packages")
# The healthy counterpart: the same module on an Ada GPU (8.9 runs sm_80's SASS).
torch_fixture("flash-attn-fatbin-on-ada-clean", [ERROR_CTOR_OLD], {
    FA_SO: fa_module(FA_SO, FA2_FATBIN),
})


# Extension modules with no DT_SONAME (a Python extension module has none), beside a torch whose
# torch/lib holds libc10.so only: the module needs c10::Error's constructor in one string ABI
# (ERROR_CTOR_OLD / ERROR_CTOR_CXX11 above) and libc10.so defines the one of torch's build.
# modelled: an ABI-neutral libc10 symbol every torch 2.x build exports (UndefinedTensorImpl's
# singleton), so that the module's other needs are met.
C10_NEUTRAL = "_ZN3c1019UndefinedTensorImpl10_singletonE"
TORCH_NEEDED = ["libc10.so", "libtorch.so", "libtorch_cpu.so", "libtorch_python.so",
                "libc10_cuda.so", "libtorch_cuda.so", "libcudart.so.12"]


def flash_attn_module(c10_error, python):
    return {"file": "flash_attn_2_cuda.cpython-%s-x86_64-linux-gnu.so" % python,
            "needed": TORCH_NEEDED,
            "needs": [(c10_error, None, None), (C10_NEUTRAL, None, None)]}


def libc10(c10_error):
    return {"soname": "libc10.so", "defines": [(c10_error, None), (C10_NEUTRAL, None)]}


# Dao-AILab/flash-attention#1644: flash_attn 2.7.4.post1's cxx11abiFALSE build under torch
# 2.7.0+cu128, whose libc10.so has the C++11 ABI ("undefined symbol:
# _ZN3c105ErrorC2ENS_14SourceLocationESs").
USER_SITE = "root/home/inferencer/.local/lib/python3.10/site-packages"
fixture("held-out-flash-attn-2741-abi-false-torch270-user-site", {
    USER_SITE + "/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so": flash_attn_module(ERROR_CTOR_OLD, "310"),
    USER_SITE + "/torch/lib/libc10.so": libc10(ERROR_CTOR_CXX11),
})
# huggingface/open-r1#684: flash_attn 2.8.0.post2 (C++11 ABI) under torch 2.6.0 from PyPI (cu124,
# pre-C++11 ABI): "undefined symbol: _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_
# stringIcSt11char_traitsIcESaIcEEE".
CONDA_SITE = "root/home/george/miniconda3/envs/openr1/lib/python3.11/site-packages"
fixture("held-out-flash-attn-280-abi-true-torch260-conda", {
    CONDA_SITE + "/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so": flash_attn_module(ERROR_CTOR_CXX11, "311"),
    CONDA_SITE + "/torch/lib/libc10.so": libc10(ERROR_CTOR_OLD),
})

# Dao-AILab/flash-attention#1783: the flash_attn-2.8.2+cu12torch2.6cxx11abiFALSE wheel under torch
# 2.6.0+cu124 (pre-C++11 ABI) still needs the C++11 symbol ("undefined symbol: ...
# _ZN3c105ErrorC2ENS_14SourceLocationENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE").
VENV_311 = "root/home/ubuntu/venv/lib/python3.11/site-packages"
fixture("held-out-flash-attn-282-abi-false-wheel-cxx11-torch260", {
    VENV_311 + "/flash_attn_2_cuda.cpython-311-x86_64-linux-gnu.so": flash_attn_module(ERROR_CTOR_CXX11, "311"),
    VENV_311 + "/torch/lib/libc10.so": libc10(ERROR_CTOR_OLD),
})

# Dao-AILab/flash-attention#1696: flash-attn 2.7.3 from `pip install flash-attn` (a prebuilt wheel
# of the pre-C++11 ABI, modelled: the report's symbol is cut at "_ZN3c105ErrorC2ENS_14Source")
# under torch 2.7.0 (C++11 ABI); building from source fixed it.
VENV_310 = "root/home/ubuntu/venv/lib/python3.10/site-packages"
fixture("flash-attn-273-prebuilt-torch270-cu126", {
    VENV_310 + "/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so": flash_attn_module(ERROR_CTOR_OLD, "310"),
    VENV_310 + "/torch/lib/libc10.so": libc10(ERROR_CTOR_CXX11),
})
# Dao-AILab/flash-attention#1691 is flash-attn-2741-cxx11abi-true-on-torch-old-abi above.
# The healthy twin of #1644: flash-attn's C++11 build under torch 2.7.0's C++11 libc10.so.
fixture("flash-attn-2741-cxx11-torch270-clean", {
    VENV_310 + "/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so": flash_attn_module(ERROR_CTOR_CXX11, "310"),
    VENV_310 + "/torch/lib/libc10.so": libc10(ERROR_CTOR_CXX11),
})

# llama.cpp's and ollama's CUDA backend, `libggml-cuda.so`: its `.nv_fatbin` carries the
# architectures of its build's `CMAKE_CUDA_ARCHITECTURES` (SASS for `NN-real`, PTX for
# `NN-virtual`). omacom/omarchy#2039 (Arch's `ollama-cuda` on GTX 1080 Ti, 6.1): "ggml was not
# compiled with any CUDA arch <= 610", so the library has no architecture at or below 6.1; the
# list below (CUDA 13's nvcc, which no longer targets Pascal) is modelled.
GGML_CUDA13_FATBIN = [[(SASS, 75), (SASS, 80), (SASS, 86), (SASS, 89), (SASS, 90),
                       (SASS, 100), (SASS, 120), (PTX, 120)]] * 2
GGML_CUDA = {"soname": "libggml-cuda.so", "needed": ["libggml-base.so", "libcudart.so.13",
                                                      "libcublas.so.13", "libcuda.so.1"],
             "defines": [("ggml_backend_cuda_init", None)]}
fixture("held-out-omarchy-arch-ollama-cuda-gtx1080ti-no-sm61", {
    "root/usr/lib/ollama/libggml-cuda.so": dict(GGML_CUDA, fatbin=GGML_CUDA13_FATBIN),
})

# ollama/ollama#11220: ollama 0.9.3's tarball unpacked under /opt/ollama on a Slurm GPU node (an
# H100, 9.0). Its CUDA 12 backend serves the GPU (the architecture list is modelled); the
# failure is elsewhere (Slurm's ROCR_VISIBLE_DEVICES makes ollama load no CUDA backend).
GGML_CUDA12_FATBIN = [[(SASS, 50), (SASS, 60), (SASS, 61), (SASS, 70), (SASS, 75), (SASS, 80),
                       (SASS, 86), (SASS, 89), (SASS, 90), (SASS, 120), (PTX, 120)]] * 2
GGML_CUDA12 = dict(GGML_CUDA, needed=["libggml-base.so", "libcudart.so.12", "libcublas.so.12",
                                      "libcuda.so.1"])
fixture("held-out-slurm-ollama-093-rocr-visible-devices", {
    "root/opt/ollama/lib/ollama/cuda_v12/libggml-cuda.so": dict(GGML_CUDA12, fatbin=GGML_CUDA12_FATBIN),
})


# vllm-project/vllm#36835: vLLM built from source on a DGX Spark (GB10, 12.1) whose CMake turned
# `12.1f` into `12.0`: its `_C.abi3.so` carries sm_120 SASS only (modelled), which runs on 12.1.
fixture("held-out-healthy-dgx-spark-vllm-source-build-sm120-only", {
    "root/home/ubuntu/venv/lib/python3.12/site-packages/vllm/_C.abi3.so": {
        "soname": "_C.abi3.so", "needed": ["libcudart.so.13", "libc10.so", "libtorch.so"],
        "defines": [("PyInit__C", None)], "fatbin": [[(SASS, 120)]] * 3},
})

# NVIDIA/Isaac-GR00T#343: torch 2.8.0 from the Jetson AI Lab index (jp6/cu126) on a Jetson Orin
# with JetPack 6.2: "ImportError: libcudss.so.0: cannot open shared object file"; NVIDIA's answer
# installs `cudss` from the CUDA repository. The wheel links the system CUDA 12.6 (no nvidia-*
# wheels); the needed list beside libcudss.so.0 is modelled.
JETSON_SITE = "root/home/orin/venv/lib/python3.10/site-packages"
fixture("held-out-jetson-orin-jp62-torch280-jetson-ai-lab-no-cudss", {
    JETSON_SITE + "/torch/lib/libtorch_cuda.so": {
        "soname": "libtorch_cuda.so", "machine": EM_AARCH64, "runpath": "$ORIGIN",
        "needed": ["libc10_cuda.so", "libcudart.so.12", "libcublas.so.12", "libcudnn.so.9",
                   "libcudss.so.0"]},
    JETSON_SITE + "/torch/lib/libc10_cuda.so": {
        "soname": "libc10_cuda.so", "machine": EM_AARCH64, "needed": ["libcudart.so.12"]},
})


# mmcdermott/MEDS_EIC_AR#163: sgl-kernel 0.3.21 from PyPI on a DGX Spark (GB10, 12.1). `cuobjdump
# --list-elf` of its `sgl_kernel/sm100/common_ops.abi3.so` shows sm_100a sm_101a sm_120a sm_80
# sm_87: architecture-specific (`a`) images, which run only on their own compute capability, so
# nothing serves 12.1. The fatbin headers below carry the numbers (100, 101, 120, 80, 87). The
# module's CUDA runtime (`libcudart.so.12` of a CUDA 12.9 build, beside the report's torch
# 2.9.1+cu129) is left out of its needs: this machine's torch is a cu130 stand-in.
fixture("held-out-dgx-spark-sglang-059-pypi-sgl-kernel-sm120a", {
    "root/home/ubuntu/venv/lib/python3.12/site-packages/sgl_kernel/sm100/common_ops.abi3.so": {
        "soname": "common_ops.abi3.so", "needed": ["libc10.so", "libtorch.so"],
        "defines": [("PyInit_common_ops", None)],
        "fatbin": [[(SASS, 80), (SASS, 87), (SASS, 100), (SASS, 101), (SASS, 120)]] * 2},
})

# ollama/ollama#17290: ollama 0.32.1's install-script layout on Ubuntu 24.04 with two Tesla P40s
# (6.1) on driver 535. ollama's CUDA 12 backend is built with CUDA 12.8 and lists Maxwell and
# Pascal as PTX only (`50-virtual;52-virtual;60-virtual;61-virtual;70;75;80;86;89;90;90a;120`,
# ollama's `llama_cuda_v12` preset as ollama/ollama#17196 quotes it), so a P40 is reached only by
# JIT-compiling CUDA 12.8 PTX; its CUDA 13 backend starts at sm_75 (modelled from the omarchy
# machine's list).
GGML_CUDA128_PTX_PASCAL = [[(PTX, 50), (PTX, 52), (PTX, 60), (PTX, 61), (SASS, 70), (SASS, 75),
                            (SASS, 80), (SASS, 86), (SASS, 89), (SASS, 90), (SASS, 120)]] * 2
fixture("held-out-ollama-0321-p40-driver535-cuda128-ptx", {
    "root/usr/local/lib/ollama/cuda_v12/libggml-cuda.so": dict(GGML_CUDA12, fatbin=GGML_CUDA128_PTX_PASCAL),
    "root/usr/local/lib/ollama/cuda_v13/libggml-cuda.so": dict(GGML_CUDA, fatbin=GGML_CUDA13_FATBIN),
})


SHT_DYNSYM, SHT_STRTAB, SHT_DYNAMIC = 11, 3, 6
SHT_VERSYM, SHT_VERDEF, SHT_VERNEED = 0x6FFFFFFF, 0x6FFFFFFD, 0x6FFFFFFE
DT = {"NULL": 0, "NEEDED": 1, "STRTAB": 5, "SYMTAB": 6, "STRSZ": 10, "SYMENT": 11,
      "SONAME": 14, "RUNPATH": 29, "VERSYM": 0x6FFFFFF0, "VERDEF": 0x6FFFFFFC,
      "VERDEFNUM": 0x6FFFFFFD, "VERNEED": 0x6FFFFFFE, "VERNEEDNUM": 0x6FFFFFFF}


SHT_PROGBITS = 1
FATBIN_MAGIC = 0xBA55ED50


def fatbin(containers):
    """A `.nv_fatbin` section: per compilation unit a container (magic, version 1, header size
    16, payload size) of entries, each a 64-byte header (kind 1 PTX / 2 SASS, its header size,
    its payload size, the architecture as a u32 at offset 28) and an 8-byte stand-in payload.
    Only the headers are what `src/parse/fatbin.rs` reads (the layout
    scripts/gen-extension-arch.py reads from real wheels)."""
    out = bytearray()
    for entries in containers:
        body = bytearray()
        for kind, arch in entries:
            head = bytearray(64)
            struct.pack_into("<HHIQ", head, 0, kind, 0x0101, 64, 8)
            struct.pack_into("<I", head, 28, arch)
            body += head + b"\0" * 8
        out += struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body
    return bytes(out)


def elf_hash(name):
    h = 0
    for c in name.encode():
        h = ((h << 4) + c) & 0xFFFFFFFF
        g = h & 0xF0000000
        if g:
            h ^= g >> 24
        h &= ~g & 0xFFFFFFFF
    return h


def pad8(b):
    return b + b"\0" * (-len(b) % 8)


def build(spec):
    strs = bytearray(b"\0")
    offsets = {}

    def s(text):
        if text not in offsets:
            offsets[text] = len(strs)
            strs.extend(text.encode() + b"\0")
        return offsets[text]

    soname = spec.get("soname")
    needed = spec.get("needed", [])
    needs = spec.get("needs", [])
    defines = spec.get("defines", [])
    def_nodes = []
    for _, v in defines:
        if v and v not in def_nodes:
            def_nodes.append(v)
    need_nodes = []
    for _, f, v in needs:
        if v and (f, v) not in need_nodes:
            need_nodes.append((f, v))
    files = []
    for f, _ in need_nodes:
        if f not in files:
            files.append(f)
    versioned = bool(def_nodes or need_nodes)
    for n in needed:
        s(n)
    if soname:
        s(soname)
    if spec.get("runpath"):
        s(spec["runpath"])
    # version indexes: 1 the base, 2.. defined nodes, then needed nodes
    def_index = {v: 2 + i for i, v in enumerate(def_nodes)}
    need_index = {fv: 2 + len(def_nodes) + i for i, fv in enumerate(need_nodes)}
    syms = bytearray(24)
    versym = bytearray(2)
    for name, f, v in needs:
        syms += struct.pack("<IBBHQQ", s(name), 0x12, 0, 0, 0, 0)
        versym += struct.pack("<H", need_index[(f, v)] if v else 1)
    for name, v in defines:
        syms += struct.pack("<IBBHQQ", s(name), 0x12, 0, 7, 0, 0)
        versym += struct.pack("<H", def_index[v] if v else 1)
    verdef = bytearray()
    # The base node names the file: its soname, or a module's file name (no DT_SONAME).
    defs = [(1, 1, soname or spec["file"])] + [(def_index[v], 0, v) for v in def_nodes]
    for k, (ndx, flags, name) in enumerate(defs):
        last = k + 1 == len(defs)
        verdef += struct.pack("<HHHHIII", 1, flags, ndx, 1, elf_hash(name), 20, 0 if last else 28)
        verdef += struct.pack("<II", s(name), 0)
    verneed = bytearray()
    for k, f in enumerate(files):
        nodes = [fv for fv in need_nodes if fv[0] == f]
        last = k + 1 == len(files)
        verneed += struct.pack("<HHIII", 1, len(nodes), s(f), 16, 0 if last else 16 + 16 * len(nodes))
        for j, fv in enumerate(nodes):
            verneed += struct.pack("<IHHII", elf_hash(fv[1]), 0, need_index[fv], s(fv[1]),
                                   0 if j + 1 == len(nodes) else 16)
    shstr = bytearray(b"\0")
    names = {}
    for n in [".dynsym", ".dynstr", ".gnu.version", ".gnu.version_d", ".gnu.version_r",
              ".dynamic", ".shstrtab"] + ([".nv_fatbin"] if spec.get("fatbin") else []):
        names[n] = len(shstr)
        shstr += n.encode() + b"\0"
    # layout
    data_start = 64 + 2 * 56
    sections = []  # (name, type, bytes, link, info, entsize)
    sections.append((".dynsym", SHT_DYNSYM, bytes(syms), 2, 1, 24))
    sections.append((".dynstr", SHT_STRTAB, bytes(strs), 0, 0, 0))
    if versioned:
        sections.append((".gnu.version", SHT_VERSYM, bytes(versym), 1, 0, 2))
        if def_nodes:
            sections.append((".gnu.version_d", SHT_VERDEF, bytes(verdef), 2, len(defs), 0))
        if files:
            sections.append((".gnu.version_r", SHT_VERNEED, bytes(verneed), 2, len(files), 0))
    if spec.get("fatbin"):
        sections.append((".nv_fatbin", SHT_PROGBITS, fatbin(spec["fatbin"]), 0, 0, 0))
    # offsets before .dynamic
    at = data_start
    placed = []
    for sec in sections:
        at += -at % 8
        placed.append((sec, at))
        at += len(sec[2])
    where = {sec[0]: off for sec, off in placed}
    dyn = []
    for n in needed:
        dyn.append((DT["NEEDED"], s(n)))
    if soname:
        dyn.append((DT["SONAME"], s(soname)))
    if spec.get("runpath"):
        dyn.append((DT["RUNPATH"], s(spec["runpath"])))
    dyn += [(DT["STRTAB"], where[".dynstr"]), (DT["STRSZ"], len(strs)),
            (DT["SYMTAB"], where[".dynsym"]), (DT["SYMENT"], 24)]
    if versioned:
        dyn.append((DT["VERSYM"], where[".gnu.version"]))
        if def_nodes:
            dyn += [(DT["VERDEF"], where[".gnu.version_d"]), (DT["VERDEFNUM"], len(defs))]
        if files:
            dyn += [(DT["VERNEED"], where[".gnu.version_r"]), (DT["VERNEEDNUM"], len(files))]
    dyn.append((DT["NULL"], 0))
    dynamic = b"".join(struct.pack("<qQ", t, v) for t, v in dyn)
    # .dynstr must not change after its offsets were used: every string was added above.
    at += -at % 8
    dyn_at = at
    at += len(dynamic)
    placed.append(((".dynamic", SHT_DYNAMIC, dynamic, 2, 0, 16), dyn_at))
    at += -at % 8
    placed.append(((".shstrtab", SHT_STRTAB, bytes(shstr), 0, 0, 0), at))
    at += len(shstr)
    at += -at % 8
    shoff = at
    shnum = len(placed) + 1
    total = shoff + 64 * shnum
    out = bytearray(total)
    out[0:64] = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + struct.pack(
        "<HHIQQQIHHHHHH", 3, spec.get("machine", EM_X86_64), 1, 0, 64, shoff, 0, 64, 56, 2, 64, shnum,
        shnum - 1)
    out[64:120] = struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, total, total, 0x1000)
    out[120:176] = struct.pack("<IIQQQQQQ", 2, 6, dyn_at, dyn_at, dyn_at, len(dynamic),
                               len(dynamic), 8)
    sh = bytearray(64)
    for (name, kind, body, link, info, entsize), off in placed:
        out[off:off + len(body)] = body
        flags = 0 if name == ".shstrtab" else 2
        sh += struct.pack("<IIQQQQIIQQ", names[name], kind, flags, off, off, len(body), link,
                          info, 8, entsize)
    out[shoff:shoff + len(sh)] = sh
    return bytes(out)


def main(argv):
    check = "--check" in argv
    bad = []
    for rel, spec in sorted(FILES.items()):
        path = os.path.join(ROOT, rel)
        want = build(spec)
        if check:
            try:
                with open(path, "rb") as f:
                    have = f.read()
            except OSError:
                have = None
            if have != want:
                bad.append(rel)
            continue
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(want)
    if bad:
        print("differs from what gen-symbol-elf.py writes:\n  " + "\n  ".join(bad))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

//! CUDA toolkits and the host compiler they build with, the CUDA libraries found on the machine,
//! and which copy of each a framework loads.

use serde::{Deserialize, Serialize};

use super::{Component, LibraryFamily, OwnerKind};

/// A CUDA toolkit installation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Toolkit {
    /// The toolkit folder after links ("/usr/local/cuda-13.0").
    pub path: String,
    /// "13.0.88" or "12.4.1"; null when nothing said.
    pub version: Option<String>,
    /// "version.json", "version.txt", "nvcc", "libcudart", "folder-name".
    pub version_source: Option<String>,
    pub nvcc: Option<String>,
    /// The compiler's own version, as `nvcc --version` or version.json's `cuda_nvcc` says it
    /// ("13.0.88"; users quote it as "V13.0.88"). Null when neither answered.
    #[serde(default)]
    pub nvcc_version: Option<String>,
    /// Component versions from `version.json` (`cuda_nvcc`, `cuda_cudart`, ...), sorted by
    /// name; empty when the toolkit has no version.json.
    #[serde(default)]
    pub components: Vec<Component>,
    /// Whether this is the toolkit `torch.utils.cpp_extension` and most extension builds
    /// would compile with: CUDA_HOME / CUDA_PATH, else the nvcc on PATH, else /usr/local/cuda.
    #[serde(default)]
    pub builds_extensions: bool,
    /// The newest GCC major its nvcc accepts, from its own `crt/host_config.h`
    /// (`#if __GNUC__ > 14`); null when the header was not there to read.
    #[serde(default)]
    pub gcc_max: Option<u32>,
    /// How it was found: "/usr/local/cuda", "CUDA_HOME", "PATH", "conda", "scan", ...
    pub found_via: Vec<String>,
}

/// A host compiler as nvcc would run it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HostCompiler {
    /// The program as named where it was found (`/usr/bin/gcc`, or a `CC` value).
    pub path: String,
    /// "gcc" or "clang", from its `--version` banner.
    pub kind: String,
    /// "14.2.1", from its `--version` banner.
    pub version: String,
    /// What named it: "NVCC_CCBIN", "CUDAHOSTCXX", "CC", "PATH", or "installed" (no `gcc` on
    /// PATH, one GCC in `/usr/lib/gcc`).
    pub via: String,
    /// Where `version` came from: "--version" (the compiler's banner; the full version), or
    /// "file names" (the major only: `gcc` linked to `gcc-14`, or the one folder of
    /// `/usr/lib/gcc/<triplet>/`), where the compiler could not be run.
    #[serde(default)]
    pub version_source: String,
}

/// CUDA libraries outside the driver: each list is sorted by path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Libraries {
    pub cudnn: Vec<Library>,
    pub nccl: Vec<Library>,
    pub cublas: Vec<Library>,
    pub cudart: Vec<Library>,
    pub tensorrt: Vec<Library>,
    /// Per framework, which copy of each CUDA library its process loads, resolved the way ld.so
    /// does (`probe::linkmap`); sorted by environment, then framework.
    #[serde(default)]
    pub loads: Vec<FrameworkLoads>,
    /// Where the loader's soname table came from: "ld.so.cache", or "ld.so.conf (ld.so.cache
    /// missing)" / "ld.so.conf (ld.so.cache older than ld.so.conf)" when the folders `ldconfig`
    /// would scan stand in for it; null when nothing was resolved.
    #[serde(default)]
    pub loader_table: Option<String>,
    /// Symbols a loaded object needs from a CUDA library that the copy the loader resolves does
    /// not define (both files' dynamic symbol tables read, `probe::linkmap::symbols`): one entry
    /// per (needer, provider) pair with a gap, for pairs whose two files are not in one folder.
    /// Sorted by environment, framework, needer.
    #[serde(default)]
    pub symbol_gaps: Vec<SymbolGap>,
    /// Objects of such a pair whose symbol tables could not be read, and why.
    #[serde(default)]
    pub symbols_unread: Vec<SymbolsUnread>,
    /// Programs' own CUDA code (llama.cpp's and ollama's `libggml-cuda.so`), each library
    /// once; absent when none was found.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cuda_code: Vec<CudaCode>,
}

/// A loaded object that needs symbols a library's resolved copy lacks: what ld.so reports as
/// "undefined symbol: X, version V" (or "version `V' not found") when it loads the pair.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SymbolGap {
    /// The Python environment's prefix.
    pub env: String,
    /// The framework whose process maps the pair ("torch", "jax", ...).
    pub framework: String,
    /// The object that needs the symbols (as found: `.../nvidia/cusparse/lib/libcusparse.so.12`).
    pub needer: String,
    /// The soname it needs them from ("libnvJitLink.so.12").
    pub soname: String,
    /// The file the loader resolves that soname to for this process.
    pub provider: String,
    /// The first needed symbol the provider does not define, in the needer's table order.
    pub symbol: String,
    /// The version node it is needed at ("libnvJitLink.so.12"); null for an unversioned need
    /// (matched to the provider by the library's API prefix: `nccl`, `cublasLt`, ...).
    pub version: Option<String>,
    /// Whether the provider defines that version node at all; when not, ld.so refuses the
    /// needer with "version `V' not found" before any symbol.
    pub version_defined: bool,
    /// How many of the symbols the needer takes from the provider are missing there.
    pub missing: u32,
    /// How many were compared.
    pub compared: u32,
}

/// An object of a checked pair whose symbol tables could not be read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct SymbolsUnread {
    pub path: String,
    /// "not an ELF object", "no readable section header table", "no dynamic symbol table", "a
    /// symbol table runs past the end of the file", or why the file could not be opened.
    pub why: String,
}

/// The CUDA libraries one framework's process loads.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FrameworkLoads {
    /// The Python environment's prefix.
    pub env: String,
    /// "torch", "jax", "tensorflow", "cupy"; "onnxruntime" for onnxruntime-gpu's CUDA provider
    /// (`onnxruntime/capi/libonnxruntime_providers_cuda.so`, resolved when it is an ELF file).
    pub framework: String,
    /// "elf" when its modules' dynamic sections were read; "model" when they could not be (a
    /// fixture's empty files) and the framework's documented search path stands in.
    pub basis: String,
    /// One entry per soname, sorted by family then soname.
    pub libraries: Vec<LibraryLoad>,
}

/// One soname a framework needs and the file the loader would map for it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LibraryLoad {
    /// "cudart", "cublas", "cudnn", "nccl", "nvjitlink", "nvrtc", "cusparse", "cusparselt",
    /// "cufft", "cusolver", "curand", "cupti", "cufile", "nvshmem", "tensorrt".
    pub family: LibraryFamily,
    /// "libcudnn.so.9".
    pub soname: String,
    /// The module whose `DT_NEEDED` (or run-time `dlopen`) asks for it.
    pub needed_by: String,
    /// How it is asked for: "needed" (`DT_NEEDED`, read from the module), "dlopen" (loaded by
    /// soname at run time, as the framework is known to), "preload" (loaded by path).
    pub by: String,
    /// The file that loads (as found, before links); null when no folder searched has it.
    pub path: Option<String>,
    /// How the loader reaches it: "preload" (loaded by path by the framework), "RPATH",
    /// "RPATH of the executable" (the interpreter's own, a conda `python`'s `$ORIGIN/../lib`),
    /// "LD_LIBRARY_PATH", "RUNPATH", "ld.so.cache", "ld.so.conf", "default"; null when not found.
    pub via: Option<String>,
    /// Its version: from the file name the link resolves to, else its package.
    pub version: Option<String>,
    /// Who installed the file that loads; null when not found.
    pub owner: Option<LibraryOwner>,
    /// The folders searched, in order (always given; the evidence for `library-not-found`).
    pub searched: Vec<String>,
    /// Other copies of the same soname on this machine, and why each loses.
    pub others: Vec<LosingCopy>,
}

/// Who installed a library file, whatever the loader does with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LibraryOwner {
    /// "pip", "conda", "toolkit", "bundled" (inside a framework's own folder), "dpkg",
    /// "driver", "system" (none of these says it is theirs).
    pub kind: OwnerKind,
    /// The package ("nvidia-cudnn-cu13", "torch", "libcudnn9-cuda-13", "cuda-13.0").
    pub package: Option<String>,
    pub version: Option<String>,
    /// How the owner was told: "RECORD", "wheel-layout", "conda-meta", "dpkg", "folder".
    pub source: String,
}

/// A copy of a soname that the loader does not pick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LosingCopy {
    pub path: String,
    pub version: Option<String>,
    pub owner: LibraryOwner,
    /// "searched after the winner (LD_LIBRARY_PATH comes before RUNPATH)", "not on the search
    /// path of torch/lib/libtorch_cuda.so", ...
    pub why: String,
}

/// One copy of a library.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Library {
    pub version: Option<String>,
    /// The main library file ("/usr/lib/x86_64-linux-gnu/libcudnn.so.9.14.0").
    pub path: String,
    /// "system", "toolkit", "pip", "conda".
    pub origin: String,
    /// Where the version came from: "file-name", "header", "dist-info".
    pub version_source: Option<String>,
    /// Whether the run-time loader finds this copy by default (LD_LIBRARY_PATH, ld.so.conf,
    /// standard folders) rather than only a program that knows its folder.
    pub on_loader_path: bool,
    /// Why the loader looks in its folder: "LD_LIBRARY_PATH", "ld.so.conf", "default"; null
    /// when it is not on the loader path. LD_LIBRARY_PATH comes before a wheel's RUNPATH.
    pub loader_origin: Option<String>,
    /// Position of its folder in loader order (0 first); null when not on the loader path.
    pub loader_rank: Option<u32>,
}

/// A program's own CUDA code outside Python packages: llama.cpp's and ollama's CUDA backend
/// (`libggml-cuda.so`), with the architectures of its `.nv_fatbin` (`parse::fatbin`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CudaCode {
    /// Whose code it is: "ollama", "llama.cpp", or "ggml" (a `PATH` folder's library).
    pub program: String,
    /// The library ("/usr/lib/ollama/libggml-cuda.so").
    pub path: String,
    /// Compute capabilities it carries SASS for ("6.1", "7.5"), sorted.
    pub sass: Vec<String>,
    /// Compute capabilities it carries PTX for, sorted.
    pub ptx: Vec<String>,
    /// Whether a bound stopped the read before the section's end (the lists may be partial).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capped: bool,
    /// The CUDA runtime shipped beside it (`libcudart.so.12.8.90` in the same folder: "12.8.90"),
    /// taken as the CUDA that wrote its PTX, as ollama's own driver check takes it
    /// (`discover/cuda_compat.go`). Absent where no full-versioned runtime is there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
}

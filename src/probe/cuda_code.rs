//! Programs' own CUDA code outside Python packages: llama.cpp's and ollama's CUDA backend,
//! `libggml-cuda.so`, whose `.nv_fatbin` holds the GPU code of the build's
//! `CMAKE_CUDA_ARCHITECTURES` (read with [`crate::parse::fatbin`], headers only), and the CUDA
//! runtime shipped beside it (ollama's `cuda_v12/libcudart.so.12.8.90`), the CUDA whose PTX it
//! carries.
//!
//! Where they are: beside a `PATH` folder's programs or in its `../lib` (llama.cpp's build and
//! release layouts), and ollama's library folders, flat (`/usr/lib/ollama`, Arch's `ollama-cuda`)
//! or per CUDA major (`cuda_v12/`, `cuda_v13/`, ollama's own tarball), the same places the HIP
//! backend is looked for (`probe::rocm`).

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::report::CudaCode;

/// The most libraries looked at.
const MAX_LIBS: usize = 32;

/// ollama's library folders (its install script's `/usr/local/lib/ollama`, distribution
/// packages' `/usr/lib/ollama`, the tarball unpacked under `/opt/ollama`).
const OLLAMA_DIRS: [&str; 3] = [
    "/usr/local/lib/ollama",
    "/usr/lib/ollama",
    "/opt/ollama/lib/ollama",
];

const LIB: &str = "libggml-cuda.so";

#[must_use]
pub(crate) fn probe(host: &Host) -> Vec<CudaCode> {
    let mut candidates = super::ggml::path_candidates(host, LIB, MAX_LIBS);
    for dir in OLLAMA_DIRS {
        let dir = Path::new(dir);
        candidates.push(("ollama".to_string(), dir.join(LIB)));
        let mut variants: Vec<PathBuf> = host
            .fs
            .read_dir(dir)
            .into_iter()
            .filter(|e| e.name.starts_with("cuda_v"))
            .map(|e| e.path.join(LIB))
            .collect();
        variants.sort();
        candidates.extend(variants.into_iter().map(|p| ("ollama".to_string(), p)));
    }
    super::ggml::read_each(host, candidates, MAX_LIBS, |program, path, file| {
        let mut read = |offset: u64, len: usize| file.read_at(offset, len);
        let fatbin = crate::parse::fatbin::parse(&mut read)?;
        let runtime = Path::new(&path)
            .parent()
            .and_then(|dir| super::toolkit::cudart_version_in(host, [dir.to_path_buf()]));
        Some(CudaCode {
            program,
            path,
            sass: cc_list(&fatbin.sass),
            ptx: cc_list(&fatbin.ptx),
            capped: fatbin.capped,
            runtime,
        })
    })
}

fn cc_list(archs: &[u32]) -> Vec<String> {
    let mut archs = archs.to_vec();
    archs.sort_unstable();
    archs.dedup();
    archs
        .iter()
        .map(|a| format!("{}.{}", a / 10, a % 10))
        .collect()
}

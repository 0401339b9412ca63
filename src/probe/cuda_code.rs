//! Programs' own CUDA code outside Python packages: llama.cpp's and ollama's CUDA backend,
//! `libggml-cuda.so`, whose `.nv_fatbin` holds the GPU code of the build's
//! `CMAKE_CUDA_ARCHITECTURES` (read with [`crate::parse::fatbin`], headers only).
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
    let mut candidates: Vec<(String, PathBuf)> = Vec::new();
    for dir in host.env.path_list("PATH").into_iter().take(MAX_LIBS) {
        let llama = host
            .fs
            .read_dir(&dir)
            .iter()
            .any(|e| e.name.starts_with("llama-"));
        let program = if llama { "llama.cpp" } else { "ggml" };
        candidates.push((program.to_string(), dir.join(LIB)));
        if let Some(parent) = dir.parent() {
            candidates.push((program.to_string(), parent.join("lib").join(LIB)));
        }
    }
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
    let mut out: Vec<CudaCode> = Vec::new();
    for (program, path) in candidates {
        if out.len() >= MAX_LIBS || !host.fs.metadata(&path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let real = host.fs.canonical(&path, true).unwrap_or(path);
        let shown = real.display().to_string();
        if out.iter().any(|c| c.path == shown) {
            continue;
        }
        let Ok(file) = host.fs.open_ranged(&real) else {
            continue;
        };
        let mut read = |offset: u64, len: usize| file.read_at(offset, len);
        let Some(fatbin) = crate::parse::fatbin::parse(&mut read) else {
            continue;
        };
        out.push(CudaCode {
            program,
            path: shown,
            sass: cc_list(&fatbin.sass),
            ptx: cc_list(&fatbin.ptx),
            capped: fatbin.capped,
        });
    }
    out
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

//! Where programs keep their own GPU code outside Python packages: ggml's backends
//! (`libggml-cuda.so`, `libggml-hip.so`) beside a `PATH` folder's programs or in its `../lib`
//! (llama.cpp's build and release layouts), and in ollama's library folders. The CUDA and HIP
//! readers (`probe::cuda_code`, `probe::rocm`) look in the same places and read each real file
//! once.

use std::path::PathBuf;

use crate::host::Host;
use crate::host::ranged::RangedFile;

/// `lib` beside the programs of each of the first `max` `PATH` folders and in its `../lib`,
/// each named for the program that ships it ("llama.cpp" where the folder holds `llama-*`
/// programs, else "ggml").
pub(crate) fn path_candidates(host: &Host, lib: &str, max: usize) -> Vec<(String, PathBuf)> {
    let mut candidates = Vec::new();
    for dir in host.env.path_list("PATH").into_iter().take(max) {
        let llama = host
            .fs
            .read_dir(&dir)
            .iter()
            .any(|e| e.name.starts_with("llama-"));
        let program = if llama { "llama.cpp" } else { "ggml" };
        candidates.push((program.to_string(), dir.join(lib)));
        if let Some(parent) = dir.parent() {
            candidates.push((program.to_string(), parent.join("lib").join(lib)));
        }
    }
    candidates
}

/// `read(program, shown path, file)` over each candidate that is a regular file, once per real
/// file (links resolved), until `max` have given a result.
pub(crate) fn read_each<T>(
    host: &Host,
    candidates: Vec<(String, PathBuf)>,
    max: usize,
    mut read: impl FnMut(String, String, &RangedFile) -> Option<T>,
) -> Vec<T> {
    let mut out = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for (program, path) in candidates {
        if out.len() >= max || !host.fs.metadata(&path).is_ok_and(|m| m.is_file()) {
            continue;
        }
        let real = host.fs.canonical(&path, true).unwrap_or(path);
        let shown = real.display().to_string();
        if seen.contains(&shown) {
            continue;
        }
        seen.push(shown.clone());
        let Ok(file) = host.fs.open_ranged(&real) else {
            continue;
        };
        out.extend(read(program, shown, &file));
    }
    out
}

//! The host compiler nvcc would use, and its version.
//!
//! nvcc hands host code to `gcc`/`g++` on PATH unless told otherwise: `-ccbin`, or the
//! `NVCC_CCBIN` variable; CMake builds name it with `CUDAHOSTCXX`, and PyTorch's extension
//! builds (`torch.utils.cpp_extension`) pass `-ccbin $CC` when `CC` is set. The first of those
//! that is set names it. Asked only where a toolkit has nvcc, and never under `--host-root`
//! (the node's programs are not started).

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::report::{HostCompiler, Toolkit};

/// Which variables name the compiler, in the order they win.
const NAMED_BY: [&str; 3] = ["NVCC_CCBIN", "CUDAHOSTCXX", "CC"];

#[must_use]
pub(crate) fn probe(host: &Host, toolkits: &[Toolkit]) -> Option<HostCompiler> {
    if host.host_root().is_some() || !toolkits.iter().any(|t| t.nvcc.is_some()) {
        return None;
    }
    let (program, via) = NAMED_BY
        .iter()
        .find_map(|var| {
            let value = host.env.non_empty(var)?;
            resolve(host, value.trim()).map(|p| (p, *var))
        })
        .or_else(|| host.which("gcc").map(|p| (p, "PATH")))?;
    let out = host.run(&program, &["--version"]).ok()?;
    if !out.success() {
        return None;
    }
    let (kind, version) = crate::parse::host_compiler::banner(&out.stdout)?;
    Some(HostCompiler {
        path: program.display().to_string(),
        kind: kind.to_string(),
        version,
        via: via.to_string(),
    })
}

/// A variable's value as a program: a path as it is (a folder, as `-ccbin` takes one, holds
/// `gcc`), a bare name looked up on PATH; its first word only (`CC="gcc -m64"`).
fn resolve(host: &Host, value: &str) -> Option<PathBuf> {
    let word = value.split_whitespace().next()?;
    if word.contains('/') {
        let path = Path::new(word);
        if host.fs.is_dir(path) {
            let gcc = path.join("gcc");
            return host.fs.is_executable(&gcc).then_some(gcc);
        }
        return host.fs.is_executable(path).then(|| path.to_path_buf());
    }
    host.which(word)
}

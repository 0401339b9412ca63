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
    let named = NAMED_BY.iter().find_map(|var| {
        let value = host.env.non_empty(var)?;
        resolve(host, value.trim()).map(|p| (p, *var))
    });
    let Some((program, via)) = named.or_else(|| host.which("gcc").map(|p| (p, "PATH"))) else {
        return only_installed_gcc(host);
    };
    let asked = host
        .run(&program, &["--version"])
        .ok()
        .filter(crate::host::CmdOutput::success)
        .and_then(|out| crate::parse::host_compiler::banner(&out.stdout));
    let (kind, version, source) = match asked {
        Some((kind, version)) => (kind, version, "--version"),
        // Debian and Ubuntu install `gcc` as a link to `gcc-N`: its name is the major.
        None => (
            "gcc",
            link_major(host, &program).or_else(|| only_gcc_major(host))?,
            "file names",
        ),
    };
    Some(HostCompiler {
        path: program.display().to_string(),
        kind: kind.to_string(),
        version,
        via: via.to_string(),
        version_source: source.to_string(),
    })
}

/// `gcc -> gcc-14` (Debian's and Ubuntu's `gcc` package): "14".
fn link_major(host: &Host, program: &Path) -> Option<String> {
    let target = host.fs.read_link(program)?;
    let name = target.file_name()?.to_str()?;
    let major = name
        .strip_prefix("gcc-")
        .or_else(|| name.strip_prefix("g++-"))?;
    (!major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())).then(|| major.to_string())
}

/// The GCC major of `/usr/lib/gcc/<triplet>/<version>/` when exactly one is installed (several,
/// as Ubuntu keeps beside its default, do not tell which one `gcc` runs).
fn only_gcc_major(host: &Host) -> Option<String> {
    let mut majors: Vec<String> = host
        .fs
        .read_dir("/usr/lib/gcc")
        .into_iter()
        .flat_map(|triplet| host.fs.read_dir(&triplet.path))
        .filter_map(|v| {
            let major = v.name.split('.').next()?.to_string();
            (!major.is_empty() && major.bytes().all(|b| b.is_ascii_digit())).then_some(major)
        })
        .collect();
    majors.sort();
    majors.dedup();
    (majors.len() == 1).then(|| majors.remove(0))
}

/// No `gcc` on PATH: the one GCC the machine has installed, where that is all it has.
fn only_installed_gcc(host: &Host) -> Option<HostCompiler> {
    only_gcc_major(host).map(|major| HostCompiler {
        path: "/usr/lib/gcc".to_string(),
        kind: "gcc".to_string(),
        version: major,
        via: "installed".to_string(),
        version_source: "file names".to_string(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::env::Env;

    fn nvcc_toolkit() -> Vec<Toolkit> {
        vec![Toolkit {
            path: "/usr/local/cuda".into(),
            nvcc: Some("/usr/local/cuda/bin/nvcc".into()),
            ..Toolkit::default()
        }]
    }

    fn host(root: &Path) -> Host {
        Host::rooted(
            root,
            Env::from_pairs([("PATH", "/usr/bin")]),
            std::time::Duration::from_secs(2),
        )
    }

    #[test]
    fn a_gcc_that_cannot_run_is_told_by_its_link_or_the_one_gcc_installed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::create_dir_all(root.join("usr/bin")).expect("bin");
        // Debian's layout: gcc -> gcc-14, the compiler itself not runnable here.
        let gcc14 = root.join("usr/bin/gcc-14");
        std::fs::write(&gcc14, "").expect("gcc-14");
        std::fs::set_permissions(&gcc14, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        std::os::unix::fs::symlink("gcc-14", root.join("usr/bin/gcc")).expect("link");
        let found = probe(&host(root), &nvcc_toolkit()).expect("a compiler");
        assert_eq!((found.version.as_str(), found.via.as_str()), ("14", "PATH"));
        assert_eq!(found.version_source, "file names");
        // No toolkit with nvcc: nothing is asked.
        assert!(probe(&host(root), &[]).is_none());

        // No gcc on PATH: the one GCC installed, but not when several are.
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path();
        std::fs::create_dir_all(root.join("usr/lib/gcc/x86_64-redhat-linux/16")).expect("gcc");
        let found = probe(&host(root), &nvcc_toolkit()).expect("the installed one");
        assert_eq!(
            (found.version.as_str(), found.via.as_str()),
            ("16", "installed")
        );
        std::fs::create_dir_all(root.join("usr/lib/gcc/x86_64-redhat-linux/15")).expect("gcc");
        assert!(probe(&host(root), &nvcc_toolkit()).is_none());
    }
}

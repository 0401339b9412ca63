//! The ptxas programs Triton's variables point at (`TRITON_PTXAS_PATH`, and ptxas-blackwell's
//! `TRITON_PTXAS_BLACKWELL_PATH` / `TRITON_PTXAS-BLACKWELL_PATH`), and the CUDA release each
//! belongs to, so that `triton-ptxas-too-old-for-gpu` can judge one outside every toolkit the
//! toolkit probe found (a pip `nvidia-cuda-nvcc` wheel's `bin/ptxas`, a copied toolkit).
//!
//! The release comes from the toolkit folder above the program's `bin/` (`version.json`, else
//! `version.txt`), else from the version text in the program's own bytes ("Cuda compilation
//! tools, release 12.8, V12.8.93", as `ptxas --version` prints it); the program is never run.
//! Every read is bounded: the two text files by the file layer's limits, the program by
//! [`MAX_SCAN`] bytes read in 1 MiB pieces (a 10 GB sparse file is read that far and no
//! further; a FIFO or device is refused when opened; links are followed inside the root).

use std::path::Path;

use crate::host::Host;
use crate::parse::{cuda_files, nvcc};
use crate::report::{EnvVar, PtxasFile};

/// Triton's variables naming a ptxas.
const VARIABLES: [&str; 3] = [
    "TRITON_PTXAS_PATH",
    "TRITON_PTXAS_BLACKWELL_PATH",
    "TRITON_PTXAS-BLACKWELL_PATH",
];

/// How much of a program is searched for its version text (ptxas of CUDA 12 and 13 is 30 to
/// 50 MB).
const MAX_SCAN: u64 = 128 << 20;

/// The size of each read.
const PIECE: usize = 1 << 20;

/// What the banner starts with.
const BANNER: &[u8] = b"Cuda compilation tools, release ";

/// One entry per Triton variable that is set.
pub(crate) fn probe(host: &Host, environment: &[EnvVar]) -> Vec<PtxasFile> {
    VARIABLES
        .iter()
        .filter_map(|var| environment.iter().find(|v| v.name == *var))
        .filter(|v| !v.value.trim().is_empty())
        .map(|v| {
            let path = Path::new(v.value.trim());
            let (cuda, source) = match release(host, path) {
                Some((c, s)) => (Some(c), Some(s.to_string())),
                None => (None, None),
            };
            PtxasFile {
                variable: v.name.clone(),
                path: v.value.clone(),
                cuda,
                cuda_source: source,
            }
        })
        .collect()
}

/// The CUDA release of the ptxas at `path`, and where it was read.
fn release(host: &Host, path: &Path) -> Option<(String, &'static str)> {
    if !path.is_absolute() {
        return None;
    }
    // `.../cuda-12.8/bin/ptxas`: the toolkit's own files sit one folder above `bin/`.
    if let Some(top) = path
        .parent()
        .filter(|b| b.file_name().is_some_and(|n| n == "bin"))
        .and_then(Path::parent)
    {
        if let Some(v) = host
            .fs
            .read_opt(top.join("version.json"))
            .and_then(|t| cuda_files::toolkit_version_json(&t))
        {
            return Some((v, "version.json"));
        }
        if let Some(v) = host
            .fs
            .read_opt(top.join("version.txt"))
            .and_then(|t| cuda_files::toolkit_version_txt(&t))
        {
            return Some((v, "version.txt"));
        }
    }
    banner(host, path).map(|v| (v, "banner"))
}

/// The release named by the version text in the program's bytes: the full version
/// ("V12.8.93") where the text has it, else the release ("12.8").
fn banner(host: &Host, path: &Path) -> Option<String> {
    let file = host.fs.open_ranged(path).ok()?;
    let end = file.len().min(MAX_SCAN);
    let mut offset = 0u64;
    // The end of the previous piece, so that a banner across two pieces is found.
    let mut carry: Vec<u8> = Vec::new();
    while offset < end {
        let want = usize::try_from((end - offset).min(PIECE as u64)).ok()?;
        let piece = file.read_at(offset, want)?;
        if piece.is_empty() {
            break;
        }
        offset += piece.len() as u64;
        let mut window = std::mem::take(&mut carry);
        window.extend_from_slice(&piece);
        if let Some(v) = find_banner(&window) {
            return Some(v);
        }
        let keep = window.len().min(BANNER.len() + 48);
        carry = window[window.len() - keep..].to_vec();
    }
    None
}

/// The version in the first complete banner of `bytes`.
fn find_banner(bytes: &[u8]) -> Option<String> {
    let mut from = 0;
    while let Some(at) = bytes[from..]
        .windows(BANNER.len())
        .position(|w| w == BANNER)
        .map(|p| from + p)
    {
        let text: String = bytes[at..]
            .iter()
            .take(BANNER.len() + 48)
            .take_while(|b| b.is_ascii_graphic() || **b == b' ')
            .map(|b| char::from(*b))
            .collect();
        // A banner cut at the window's end may lack its end: wait for the next piece.
        if at + text.len() >= bytes.len() {
            return None;
        }
        if let Some(v) = nvcc::parse_version(&text) {
            return Some(v.full.unwrap_or(v.release));
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_is_read_whole_or_by_its_release() {
        let mut bytes = vec![0u8; 100];
        bytes.extend_from_slice(b"Cuda compilation tools, release 12.8, V12.8.93\0rest");
        assert_eq!(find_banner(&bytes).as_deref(), Some("12.8.93"));
        let short = b"xx Cuda compilation tools, release 13.0\0";
        assert_eq!(find_banner(short).as_deref(), Some("13.0"));
        // Cut at the end of the window: not yet.
        assert_eq!(
            find_banner(b"Cuda compilation tools, release 12.8, V12"),
            None
        );
        assert_eq!(find_banner(b"Cuda compilation tools, release x\0"), None);
        assert_eq!(find_banner(b""), None);
    }
}

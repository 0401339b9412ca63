//! Which objects of a framework's modelled process need symbols that the copy of a CUDA library
//! the loader resolved for them does not define: the pair ld.so fails on with "undefined
//! symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12" (a wheel's cuSPARSE over a
//! toolkit's older nvJitLink), "... cublasLtGetStatusString, version libcublasLt.so.12"
//! (cuBLAS and cuBLASLt of different releases) or "libtorch_cuda.so: undefined symbol:
//! ncclCommRegister" (torch over an older NCCL).
//!
//! Kept cheap: only pairs whose provider is a CUDA, cuDNN or NCCL library
//! ([`crate::parse::libfamily`], TensorRT aside) in another folder than the needer (a wheel's
//! or toolkit's own copies are built together), both readable ELF files; at most
//! [`MAX_PAIRS`] pairs and [`MAX_COMPARED`] symbols a pair; each file's tables read once, with
//! the caps of [`crate::parse::dynsym`].
//!
//! A versioned need belongs to the file its version node names (`vn_file`). An unversioned
//! need (NCCL exports no versions) could bind to any object in the process, so it is matched to
//! a library only by that library's API prefix ([`PREFIXES`]): `ncclCommRegister` is NCCL's.

use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use super::{Ctx, Process};
use crate::parse::dynsym::{self, Need, Symbols};
use crate::parse::libfamily as family;
use crate::parse::libname::split_soname;
use crate::report::{LibraryFamily, SymbolGap, SymbolsUnread};

/// Pairs compared at most per framework (torch 2.x maps about 30 CUDA libraries).
pub(super) const MAX_PAIRS: usize = 64;
/// Needed symbols compared at most per pair.
pub(super) const MAX_COMPARED: usize = 20_000;

/// The API prefixes of each library's exports (by file stem), for needs without a version:
/// read from each library's public header's function names (`nccl.h`: `ncclCommRegister`;
/// `cublasLt.h`: `cublasLtMatmul`). The longest prefix decides (`cublasLt` before `cublas`).
const PREFIXES: &[(&str, &[&str])] = &[
    ("libnccl", &["nccl", "pnccl"]),
    ("libcublasLt", &["cublasLt"]),
    ("libcublas", &["cublas"]),
    ("libcusparseLt", &["cusparseLt"]),
    ("libcusparse", &["cusparse"]),
    ("libcudnn", &["cudnn"]),
    ("libnvJitLink", &["nvJitLink", "__nvJitLink"]),
    ("libnvrtc", &["nvrtc"]),
    ("libcufft", &["cufft"]),
    ("libcurand", &["curand"]),
    ("libcusolver", &["cusolver"]),
    ("libcudart", &["cuda", "__cuda"]),
    ("libcupti", &["cupti"]),
];

/// The library stem whose API prefix `symbol` carries (the longest prefix wins).
fn prefix_owner(symbol: &str) -> Option<&'static str> {
    PREFIXES
        .iter()
        .flat_map(|(stem, prefixes)| prefixes.iter().map(move |p| (*stem, *p)))
        .filter(|(_, p)| symbol.starts_with(p))
        .max_by_key(|(_, p)| p.len())
        .map(|(stem, _)| stem)
}

/// A soname's stem, an auditwheel hash dropped (`libcudart-9335f6a2.so.12` → `libcudart`).
fn stem(soname: &str) -> Option<&str> {
    let (stem, _) = split_soname(soname)?;
    Some(match stem.rsplit_once('-') {
        Some((base, hash)) if hash.len() == 8 && hash.chars().all(|c| c.is_ascii_hexdigit()) => {
            base
        }
        _ => stem,
    })
}

/// Whether a need of `needer` is one it takes from the library loaded as `soname`.
fn taken_from(need: &Need, soname: &str) -> bool {
    match &need.file {
        Some(file) => file == soname,
        None => stem(soname).is_some_and(|s| prefix_owner(&need.name) == Some(s)),
    }
}

/// What one framework's symbol comparison found.
#[derive(Default)]
pub(super) struct Compared {
    pub(super) gaps: Vec<SymbolGap>,
    pub(super) unread: Vec<SymbolsUnread>,
}

impl Ctx<'_> {
    /// The dynamic symbol table of a file, read once per scan; why not, as words.
    pub(super) fn symbols(&self, path: &Path) -> Rc<Result<Symbols, String>> {
        let canonical = self.canonical(path);
        if let Some(s) = self.syms.borrow().get(&canonical) {
            return s.clone();
        }
        let parsed = Rc::new(match self.host.fs.open_ranged(&canonical) {
            Ok(f) => {
                let mut read = |off: u64, len: usize| f.read_at(off, len);
                dynsym::parse(&mut read).map_err(|e| e.as_str().to_string())
            }
            Err(e) => Err(format!("not opened: {e}")),
        });
        self.syms.borrow_mut().insert(canonical, parsed.clone());
        parsed
    }

    /// Every (needer, provider) pair of the process worth comparing, and what each lacks.
    pub(super) fn compare_symbols(&self, env: &str, framework: &str, p: &Process) -> Compared {
        let mut out = Compared::default();
        let mut pairs: Vec<(usize, usize, &str)> = Vec::new();
        'objects: for (i, obj) in p.objs.iter().enumerate() {
            let Some(d) = &obj.dynamic else { continue };
            for name in &d.needed {
                let Some(&j) = p.by_name.get(name) else {
                    continue;
                };
                if j == i
                    || j >= p.objs.len()
                    || family::of(name).is_none_or(|f| f == LibraryFamily::Tensorrt)
                {
                    continue;
                }
                let (a, b) = (self.canonical(&obj.path), self.canonical(&p.objs[j].path));
                if a.parent() == b.parent() {
                    continue;
                }
                // Both real ELF files (a fixture's empty stand-in is not compared).
                if self.dynamic(&obj.path).is_none() || self.dynamic(&p.objs[j].path).is_none() {
                    continue;
                }
                pairs.push((i, j, name.as_str()));
                if pairs.len() >= MAX_PAIRS {
                    break 'objects;
                }
            }
        }
        let mut unread: HashMap<String, String> = HashMap::new();
        for (i, j, soname) in pairs {
            let (needer_path, provider_path) = (&p.objs[i].path, &p.objs[j].path);
            let needer = self.symbols(needer_path);
            let needer = match needer.as_ref() {
                Ok(s) => s,
                Err(why) => {
                    unread.insert(needer_path.display().to_string(), why.clone());
                    continue;
                }
            };
            let wanted: Vec<&Need> = needer
                .needs
                .iter()
                .filter(|n| taken_from(n, soname))
                .take(MAX_COMPARED)
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let provider = self.symbols(provider_path);
            let provider = match provider.as_ref() {
                Ok(s) => s,
                Err(why) => {
                    unread.insert(provider_path.display().to_string(), why.clone());
                    continue;
                }
            };
            let missing: Vec<&&Need> = wanted
                .iter()
                .filter(|n| !provider.defines(&n.name, n.version.as_deref()))
                .collect();
            let Some(first) = missing.first() else {
                continue;
            };
            out.gaps.push(SymbolGap {
                env: env.to_string(),
                framework: framework.to_string(),
                needer: needer_path.display().to_string(),
                soname: soname.to_string(),
                provider: provider_path.display().to_string(),
                symbol: first.name.clone(),
                version: first.version.clone(),
                version_defined: first
                    .version
                    .as_deref()
                    .is_none_or(|v| provider.has_version_node(v)),
                missing: u32::try_from(missing.len()).unwrap_or(u32::MAX),
                compared: u32::try_from(wanted.len()).unwrap_or(u32::MAX),
            });
        }
        out.unread = unread
            .into_iter()
            .map(|(path, why)| SymbolsUnread { path, why })
            .collect();
        out.unread.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unversioned_need_belongs_to_the_library_of_its_longest_prefix() {
        assert_eq!(prefix_owner("ncclCommRegister"), Some("libnccl"));
        assert_eq!(prefix_owner("cublasLtMatmul"), Some("libcublasLt"));
        assert_eq!(prefix_owner("cublasSgemm_v2"), Some("libcublas"));
        assert_eq!(prefix_owner("cusparseLtInit"), Some("libcusparseLt"));
        assert_eq!(prefix_owner("cudnnCreate"), Some("libcudnn"));
        assert_eq!(prefix_owner("memcpy"), None);
        let need = |name: &str| Need {
            name: name.into(),
            file: None,
            version: None,
        };
        assert!(taken_from(&need("ncclCommRegister"), "libnccl.so.2"));
        assert!(!taken_from(&need("cublasLtMatmul"), "libcublas.so.12"));
        assert!(taken_from(&need("cudaMalloc"), "libcudart-9335f6a2.so.12"));
        let versioned = Need {
            name: "__nvJitLinkAddData_12_1".into(),
            file: Some("libnvJitLink.so.12".into()),
            version: Some("libnvJitLink.so.12".into()),
        };
        assert!(taken_from(&versioned, "libnvJitLink.so.12"));
        assert!(!taken_from(&versioned, "libcusparse.so.12"));
    }
}

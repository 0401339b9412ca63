//! The folders the dynamic loader searches, in its order: `LD_LIBRARY_PATH`, then the folders
//! `/etc/ld.so.conf` names (the cache is built from them), then the built-in defaults.
//!
//! We read the configuration rather than `/etc/ld.so.cache`: under `--root` a fixture has no
//! cache, and a stale cache is itself something `ldconfig` fixes, not a different truth.

use std::path::{Path, PathBuf};

use crate::host::Host;
use crate::parse::cuda_files::{LdConfEntry, ld_so_conf};

/// Why the loader looks in a folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    LdLibraryPath,
    LdSoConf,
    Default,
}

impl Origin {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::LdLibraryPath => "LD_LIBRARY_PATH",
            Origin::LdSoConf => "ld.so.conf",
            Origin::Default => "default",
        }
    }
}

/// One folder on the loader path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    /// As configured ("/usr/local/cuda/lib64").
    pub path: PathBuf,
    /// After links ("/usr/local/cuda-13.0/targets/x86_64-linux/lib").
    pub canonical: PathBuf,
    pub origin: Origin,
}

/// The loader's folders, first searched first, each real folder once.
#[derive(Debug, Clone, Default)]
pub struct LoaderPath {
    pub dirs: Vec<SearchDir>,
}

/// The x86-64 and AArch64 defaults glibc searches after the cache.
const DEFAULT_DIRS: [&str; 8] = [
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
];

/// How deep `include` lines may nest before we stop (a loop of includes must not hang us).
const MAX_INCLUDE_DEPTH: usize = 8;

impl LoaderPath {
    /// Reads `LD_LIBRARY_PATH` and `/etc/ld.so.conf` of the host.
    #[must_use]
    pub fn discover(host: &Host) -> LoaderPath {
        let mut path = LoaderPath::default();
        for dir in host.env.path_list("LD_LIBRARY_PATH") {
            path.push(host, dir, Origin::LdLibraryPath);
        }
        let mut conf_dirs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        read_conf(
            host,
            Path::new("/etc/ld.so.conf"),
            0,
            &mut seen,
            &mut conf_dirs,
        );
        for dir in conf_dirs {
            path.push(host, dir, Origin::LdSoConf);
        }
        for dir in DEFAULT_DIRS {
            path.push(host, PathBuf::from(dir), Origin::Default);
        }
        path
    }

    fn push(&mut self, host: &Host, dir: PathBuf, origin: Origin) {
        if !host.fs.is_dir(&dir) {
            return;
        }
        let canonical = host
            .fs
            .canonical(&dir, true)
            .unwrap_or_else(|_| dir.clone());
        if self.dirs.iter().any(|d| d.canonical == canonical) {
            return;
        }
        self.dirs.push(SearchDir {
            path: dir,
            canonical,
            origin,
        });
    }

    /// Whether a folder (any spelling of it) is on the loader path.
    #[must_use]
    pub fn contains(&self, host: &Host, dir: &Path) -> bool {
        self.position(host, dir).is_some()
    }

    /// A folder's place in loader order and why it is searched, if it is.
    #[must_use]
    pub fn position(&self, host: &Host, dir: &Path) -> Option<(usize, Origin)> {
        let canonical = host
            .fs
            .canonical(dir, true)
            .unwrap_or_else(|_| dir.to_path_buf());
        let i = self.dirs.iter().position(|d| d.canonical == canonical)?;
        self.dirs.get(i).map(|d| (i, d.origin))
    }
}

/// How many configuration files one scan reads at most, and how many folders it keeps: a
/// file that includes itself (or a glob matching thousands of files) costs a bounded amount.
const MAX_CONF_FILES: usize = 256;
const MAX_CONF_DIRS: usize = 4096;

/// Reads one configuration file and, depth first, what it includes. Each file (after links)
/// is read once: without that, a file including itself twice grows exponentially.
fn read_conf(
    host: &Host,
    file: &Path,
    depth: usize,
    seen: &mut std::collections::HashSet<PathBuf>,
    out: &mut Vec<PathBuf>,
) {
    if depth > MAX_INCLUDE_DEPTH || seen.len() >= MAX_CONF_FILES || out.len() >= MAX_CONF_DIRS {
        return;
    }
    let key = host
        .fs
        .canonical(file, true)
        .unwrap_or_else(|_| file.to_path_buf());
    if !seen.insert(key) {
        return;
    }
    let Some(text) = host.fs.read_opt(file) else {
        return;
    };
    for entry in ld_so_conf(&text) {
        match entry {
            LdConfEntry::Dir(dir) => {
                if dir.starts_with('/') && out.len() < MAX_CONF_DIRS {
                    out.push(PathBuf::from(dir));
                }
            }
            LdConfEntry::Include(pattern) => {
                let pattern = if pattern.starts_with('/') {
                    PathBuf::from(pattern)
                } else {
                    file.parent().unwrap_or(Path::new("/")).join(pattern)
                };
                for included in expand_glob(host, &pattern) {
                    read_conf(host, &included, depth + 1, seen, out);
                }
            }
        }
    }
}

/// Expands a `*`/`?` pattern in the last path component, sorted like glibc's `glob`.
fn expand_glob(host: &Host, pattern: &Path) -> Vec<PathBuf> {
    let (Some(dir), Some(name)) = (
        pattern.parent(),
        pattern.file_name().and_then(|n| n.to_str()),
    ) else {
        return Vec::new();
    };
    if !name.contains(['*', '?']) {
        return vec![pattern.to_path_buf()];
    }
    host.fs
        .read_dir(dir)
        .into_iter()
        .filter(|e| wildcard_match(name, &e.name))
        .map(|e| e.path)
        .collect()
}

/// Shell-style matching of `*` and `?` (no character classes: ld.so.conf lines do not use them).
#[must_use]
pub fn wildcard_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some('*') => {
                star = Some((pi, ti));
                pi += 1;
            }
            Some(&c) if c == '?' || c == t[ti] => {
                pi += 1;
                ti += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    pi = sp + 1;
                    ti = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::wildcard_match;

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*.conf", "nvidia.conf"));
        assert!(!wildcard_match("*.conf", "nvidia.conf.bak"));
        assert!(wildcard_match("a?c*", "abcdef"));
        assert!(wildcard_match("*", ""));
        assert!(!wildcard_match("x*", ""));
    }
}

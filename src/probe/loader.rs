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
pub(crate) enum Origin {
    LdLibraryPath,
    LdSoConf,
    Default,
}

impl Origin {
    #[must_use]
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Origin::LdLibraryPath => "LD_LIBRARY_PATH",
            Origin::LdSoConf => "ld.so.conf",
            Origin::Default => "default",
        }
    }
}

/// One folder on the loader path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchDir {
    /// As configured ("/usr/local/cuda/lib64").
    pub path: PathBuf,
    /// After links ("/usr/local/cuda-13.0/targets/x86_64-linux/lib").
    pub canonical: PathBuf,
    pub origin: Origin,
}

/// The loader's folders, first searched first, each real folder once.
#[derive(Debug, Clone, Default)]
pub(crate) struct LoaderPath {
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
    pub(crate) fn discover(host: &Host) -> LoaderPath {
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

    /// A folder's place in loader order and why it is searched, if it is.
    #[must_use]
    pub(crate) fn position(&self, host: &Host, dir: &Path) -> Option<(usize, Origin)> {
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
    // A pattern included again adds nothing: 20,000 copies of one `include` line are one.
    let mut expanded = std::collections::HashSet::new();
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
                if !expanded.insert(pattern.clone()) {
                    continue;
                }
                for included in expand_glob(host, &pattern) {
                    read_conf(host, &included, depth + 1, seen, out);
                }
            }
        }
    }
}

/// Expands an `include` pattern the way ldconfig's `glob(3)` call does: `*`, `?` and `[...]`
/// in any path component, a leading dot matched only by a literal dot, results sorted by path.
/// Every folder is listed through the host's rooted fs (never glob's own filesystem walk, which
/// would leave `--root`), and at most [`MAX_CONF_FILES`] paths come back.
fn expand_glob(host: &Host, pattern: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = vec![PathBuf::new()];
    let mut any_wildcard = false;
    for component in pattern.components() {
        let name = component.as_os_str();
        let matcher = name
            .to_str()
            .filter(|n| n.contains(['*', '?', '[']))
            .and_then(|n| glob::Pattern::new(n).ok());
        let Some(matcher) = matcher else {
            // A plain name, or a broken pattern such as an unclosed `[` (which glob(3) takes
            // literally): joined as it is.
            for path in &mut found {
                path.push(name);
            }
            continue;
        };
        any_wildcard = true;
        let mut next = Vec::new();
        for dir in &found {
            next.extend(
                host.fs
                    .read_dir(dir)
                    .into_iter()
                    .filter(|e| matcher.matches_with(&e.name, LD_CONF_GLOB))
                    .map(|e| e.path),
            );
            if next.len() >= MAX_CONF_FILES {
                next.truncate(MAX_CONF_FILES);
                break;
            }
        }
        found = next;
    }
    if any_wildcard {
        // By bytes, as glob(3) sorts in the C locale ("a-b/x" before "a/x").
        found.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
    }
    found
}

/// glob(3) as ldconfig calls it (no `GLOB_PERIOD`): `*` does not match a leading dot, so
/// `*.conf` skips an editor's `.nvidia.conf.swp`-style hidden files.
const LD_CONF_GLOB: glob::MatchOptions = glob::MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: true,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::env::Env;

    /// One file name against one pattern component, as [`expand_glob`] matches them.
    fn wildcard_match(pattern: &str, text: &str) -> bool {
        glob::Pattern::new(pattern).is_ok_and(|p| p.matches_with(text, LD_CONF_GLOB))
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("*.conf", "nvidia.conf"));
        assert!(!wildcard_match("*.conf", "nvidia.conf.bak"));
        assert!(wildcard_match("a?c*", "abcdef"));
        assert!(wildcard_match("*", ""));
        assert!(!wildcard_match("x*", ""));
    }

    #[test]
    fn include_patterns_follow_glob3() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        };
        for lib in ["a", "b", "c", "d", "e", "f", "g"] {
            std::fs::create_dir_all(root.join("opt").join(lib)).expect("lib dir");
        }
        write(
            "etc/ld.so.conf",
            "include /etc/ld.so.conf.d/[0-9]*.conf\ninclude /etc/ld.so.conf.d/?x.conf\n\
             include /etc/ld.so.conf.d/*.cfg\ninclude /etc/vendors/*/ld.conf\n\
             include /etc/ld.so.conf.d/[unclosed.conf\n",
        );
        // Character classes: only the names starting with a digit, in name order.
        write("etc/ld.so.conf.d/20-b.conf", "/opt/b\n");
        write("etc/ld.so.conf.d/10-a.conf", "/opt/a\n");
        write("etc/ld.so.conf.d/x-not.conf", "/opt/none-x\n");
        // `?` is one character.
        write("etc/ld.so.conf.d/cx.conf", "/opt/c\n");
        write("etc/ld.so.conf.d/ccx.conf", "/opt/none-ccx\n");
        // `*` skips hidden files, as glob(3) without GLOB_PERIOD does.
        write("etc/ld.so.conf.d/.hidden.cfg", "/opt/none-hidden\n");
        write("etc/ld.so.conf.d/d.cfg", "/opt/d\n");
        // A wildcard in a folder component, not only the last.
        write("etc/vendors/nv/ld.conf", "/opt/e\n");
        write("etc/vendors/amd/ld.conf", "/opt/f\n");
        // An unclosed `[` is a literal name.
        write("etc/ld.so.conf.d/[unclosed.conf", "/opt/g\n");
        let host = Host::rooted(root, Env::default(), std::time::Duration::from_secs(1));
        let mut dirs = Vec::new();
        let mut seen = std::collections::HashSet::new();
        read_conf(&host, Path::new("/etc/ld.so.conf"), 0, &mut seen, &mut dirs);
        let dirs: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        assert_eq!(
            dirs,
            [
                "/opt/a", "/opt/b", "/opt/c", "/opt/d", "/opt/f", "/opt/e", "/opt/g"
            ]
        );
    }

    #[test]
    fn character_classes_and_leading_dots() {
        assert!(wildcard_match("[0-9]*.conf", "10-cuda.conf"));
        assert!(!wildcard_match("[0-9]*.conf", "cuda.conf"));
        assert!(wildcard_match("[!x]?.conf", "ab.conf"));
        assert!(!wildcard_match("*.conf", ".cuda.conf"));
        assert!(wildcard_match(".*.conf", ".cuda.conf"));
    }
}

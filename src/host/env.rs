//! A snapshot of the environment variables, taken once, so probes never read the live process
//! environment (tests inject their own) and every probe sees the same values.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

/// Environment variables as the report saw them.
#[derive(Debug, Clone, Default)]
pub struct Env {
    vars: BTreeMap<String, String>,
    /// The bytes of the variables that are not UTF-8, by their shown name: children get them
    /// as they were.
    raw: BTreeMap<String, (OsString, OsString)>,
}

/// Bytes as text: UTF-8 kept, every other byte written `\xNN`, so one odd byte shows where it
/// is instead of costing the whole value.
#[must_use]
pub fn escape_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        out.push_str(chunk.valid());
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

impl Env {
    /// The current process's environment. A variable that is not valid UTF-8 is kept: shown
    /// with its odd bytes escaped (`\xff`), and passed to children as the bytes it was.
    /// `LD_LIBRARY_PATH` with one such entry still has its other entries.
    #[must_use]
    pub fn from_process() -> Env {
        let mut env = Env::default();
        for (k, v) in std::env::vars_os() {
            match (k.to_str(), v.to_str()) {
                (Some(key), Some(value)) => {
                    env.vars.insert(key.to_string(), value.to_string());
                }
                _ => {
                    let key = escape_bytes(k.as_bytes());
                    env.vars.insert(key.clone(), escape_bytes(v.as_bytes()));
                    env.raw.insert(key, (k, v));
                }
            }
        }
        env
    }

    /// Every variable as the bytes a child should get, less `remove`.
    #[must_use]
    pub fn child_pairs(&self, remove: &[&str]) -> Vec<(OsString, OsString)> {
        self.vars
            .iter()
            .filter(|(k, _)| !remove.contains(&k.as_str()))
            .map(|(k, v)| match self.raw.get(k) {
                Some((rk, rv)) => (rk.clone(), rv.clone()),
                None => (OsString::from(k), OsString::from(v)),
            })
            .collect()
    }

    /// An environment made of the given pairs (tests, and the child probes).
    #[must_use]
    pub fn from_pairs<K: Into<String>, V: Into<String>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Env {
        Env {
            vars: pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            raw: BTreeMap::new(),
        }
    }

    /// A variable's value; set-but-empty is `Some("")`, which matters for `CUDA_VISIBLE_DEVICES`.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// A variable's value when set and not empty.
    #[must_use]
    pub fn non_empty(&self, key: &str) -> Option<&str> {
        self.get(key).filter(|v| !v.trim().is_empty())
    }

    /// The absolute entries of a colon-separated path list (`PATH`, `LD_LIBRARY_PATH`), in order.
    ///
    /// Relative and empty entries are dropped: they depend on the folder gpu-doctor happens to
    /// run in, and under `--root` they would not name anything inside the fixture.
    ///
    /// An entry listed again is left out: the first one already answered every look-up the
    /// later one would (a `PATH` of 10,000 copies of one folder costs one).
    #[must_use]
    pub fn path_list(&self, key: &str) -> Vec<PathBuf> {
        let mut seen = std::collections::HashSet::new();
        self.get(key)
            .map(|v| {
                v.split(':')
                    .filter(|p| p.starts_with('/'))
                    .filter(|p| seen.insert(*p))
                    .map(PathBuf::from)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A single absolute path from a variable such as `CUDA_HOME`.
    #[must_use]
    pub fn path(&self, key: &str) -> Option<PathBuf> {
        self.non_empty(key)
            .filter(|v| v.starts_with('/'))
            .map(|v| PathBuf::from(v.trim_end_matches('/')))
            .filter(|p| !p.as_os_str().is_empty())
    }

    /// Every variable whose name starts with `prefix`, sorted by name.
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
        self.vars
            .iter()
            .filter(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_lists_keep_order_and_drop_relative_entries() {
        let env = Env::from_pairs([("LD_LIBRARY_PATH", "/a/lib::rel:/b/lib:/a/lib")]);
        assert_eq!(
            env.path_list("LD_LIBRARY_PATH"),
            [PathBuf::from("/a/lib"), PathBuf::from("/b/lib")]
        );
        assert!(env.path_list("PATH").is_empty());
    }

    #[test]
    fn empty_is_set_but_not_non_empty() {
        let env = Env::from_pairs([
            ("CUDA_VISIBLE_DEVICES", ""),
            ("CUDA_HOME", "/usr/local/cuda/"),
        ]);
        assert_eq!(env.get("CUDA_VISIBLE_DEVICES"), Some(""));
        assert_eq!(env.non_empty("CUDA_VISIBLE_DEVICES"), None);
        assert_eq!(
            env.path("CUDA_HOME"),
            Some(PathBuf::from("/usr/local/cuda"))
        );
    }
}

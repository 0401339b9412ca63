//! A manifest set as files: each file's bytes, sha256, size and date, the set's date and
//! version, and the check that turns downloaded bytes into tables gpu-doctor may use.
//!
//! A set's **date** is the newest `[meta] updated` of its files. Its **version** is that date
//! and a digest of its files (`2026-11-29+1a2b3c4d5e6f`): the publisher and every client compute
//! it the same way from the bytes, so "the published set is the one I have" is a string
//! comparison, and two different sets never share a version.
//!
//! Pure. Depends on [`crate::manifest`] and sha2.

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

use super::keys::hex;
use crate::date::Date;
use crate::manifest::{
    FILE_NAMES, ManifestError, ManifestProblem, Manifests, Meta, from_sources, validate,
};

/// The manifest files built into the binary, as bytes: the same files `manifest::embedded()`
/// parses, needed here for their digests (`include_str!` of one file twice is stored once).
const EMBEDDED_FILES: [(&str, &str); 12] = [
    ("cuda.toml", include_str!("../../manifests/cuda.toml")),
    ("gpus.toml", include_str!("../../manifests/gpus.toml")),
    (
        "frameworks.toml",
        include_str!("../../manifests/frameworks.toml"),
    ),
    ("cudnn.toml", include_str!("../../manifests/cudnn.toml")),
    ("install.toml", include_str!("../../manifests/install.toml")),
    ("errors.toml", include_str!("../../manifests/errors.toml")),
    ("gpu-ids.toml", include_str!("../../manifests/gpu-ids.toml")),
    (
        "amd-gpu-ids.toml",
        include_str!("../../manifests/amd-gpu-ids.toml"),
    ),
    ("rocm.toml", include_str!("../../manifests/rocm.toml")),
    ("repos.toml", include_str!("../../manifests/repos.toml")),
    ("pypi.toml", include_str!("../../manifests/pypi.toml")),
    (
        "extension-arch.toml",
        include_str!("../../manifests/extension-arch.toml"),
    ),
];

/// One file of a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetFile {
    pub name: &'static str,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
    /// The file's `[meta] updated`.
    pub updated: String,
}

/// What identifies a set: its files, date and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetIdentity {
    pub version: String,
    pub date: Date,
    /// In [`FILE_NAMES`] order.
    pub files: Vec<SetFile>,
}

impl SetIdentity {
    /// The file called `name`.
    #[must_use]
    pub fn file(&self, name: &str) -> Option<&SetFile> {
        self.files.iter().find(|f| f.name == name)
    }
}

/// A set whose bytes parsed and validated: safe to diagnose with.
#[derive(Debug, Clone)]
pub struct CheckedSet {
    pub identity: SetIdentity,
    pub manifests: Manifests,
}

/// Why a set's bytes cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SetError {
    #[error("{file} is not UTF-8 text")]
    NotUtf8 { file: String },
    #[error(transparent)]
    Load(#[from] ManifestError),
    #[error("the manifest set fails validation ({} problem{}):\n  {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  "))]
    Invalid { problems: Vec<ManifestProblem> },
    #[error("{file}: updated `{updated}` is not a YYYY-MM-DD date")]
    BadDate { file: &'static str, updated: String },
}

/// Parses and validates a set given as `(file name, bytes)`: every file of [`FILE_NAMES`]
/// exactly once, UTF-8, loading with `from_sources` and passing `validate` with no problem.
///
/// # Errors
/// [`SetError`] with the first load error, or every validation problem.
pub fn check_set(files: &[(&str, &[u8])]) -> Result<CheckedSet, SetError> {
    let mut texts = Vec::with_capacity(files.len());
    for &(name, bytes) in files {
        let text = std::str::from_utf8(bytes).map_err(|_| SetError::NotUtf8 {
            file: name.to_string(),
        })?;
        texts.push((name, text));
    }
    let manifests = from_sources(&texts)?;
    let problems = validate(&manifests);
    if !problems.is_empty() {
        return Err(SetError::Invalid { problems });
    }
    let identity = identity(&texts, &manifests)?;
    Ok(CheckedSet {
        identity,
        manifests,
    })
}

/// The identity of a set that loaded: digests of the given texts, dates from the tables.
fn identity(texts: &[(&str, &str)], manifests: &Manifests) -> Result<SetIdentity, SetError> {
    let mut files = Vec::with_capacity(FILE_NAMES.len());
    let mut newest = Date::EPOCH;
    for (name, meta) in metas(manifests) {
        let bytes = texts
            .iter()
            .find(|(n, _)| base_name(n) == name)
            .map_or(&b""[..], |(_, t)| t.as_bytes());
        let date = Date::parse(&meta.updated).ok_or_else(|| SetError::BadDate {
            file: name,
            updated: meta.updated.clone(),
        })?;
        newest = newest.max(date);
        files.push(SetFile {
            name,
            size: bytes.len() as u64,
            sha256: sha256_hex(bytes),
            updated: meta.updated.clone(),
        });
    }
    let date = newest;
    let digests: Vec<(&str, &str)> = files.iter().map(|f| (f.name, f.sha256.as_str())).collect();
    Ok(SetIdentity {
        version: set_version(date, &digests),
        date,
        files,
    })
}

/// The set's version: its date, `+`, and the first 12 hex digits of the sha256 of one
/// `name sha256\n` line per file in [`FILE_NAMES`] order.
#[must_use]
pub fn set_version(date: Date, files: &[(&str, &str)]) -> String {
    let mut hasher = Sha256::new();
    for name in FILE_NAMES {
        let sha = files
            .iter()
            .find(|(n, _)| *n == name)
            .map_or("", |(_, s)| s);
        hasher.update(format!("{name} {sha}\n").as_bytes());
    }
    let digest = hex(&hasher.finalize());
    format!("{date}+{}", &digest[..12])
}

/// Lowercase hex sha256.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Each table's `[meta]`, in [`FILE_NAMES`] order.
#[must_use]
pub fn metas(m: &Manifests) -> [(&'static str, &Meta); 12] {
    [
        (FILE_NAMES[0], &m.cuda.meta),
        (FILE_NAMES[1], &m.gpus.meta),
        (FILE_NAMES[2], &m.frameworks.meta),
        (FILE_NAMES[3], &m.cudnn.meta),
        (FILE_NAMES[4], &m.install.meta),
        (FILE_NAMES[5], &m.errors.meta),
        (FILE_NAMES[6], &m.gpu_ids.meta),
        (FILE_NAMES[7], &m.amd_gpu_ids.meta),
        (FILE_NAMES[8], &m.rocm.meta),
        (FILE_NAMES[9], &m.repos.meta),
        (FILE_NAMES[10], &m.pypi.meta),
        (FILE_NAMES[11], &m.extension_arch.meta),
    ]
}

/// The built-in set's identity, computed once.
///
/// # Panics
/// Never in a tested build: the embedded files are the ones `manifest::embedded()` parses, and
/// a unit test computes this identity; a failure means the build itself is broken.
#[expect(
    clippy::panic,
    reason = "fixed at compile time and tested; see # Panics"
)]
#[must_use]
#[expect(
    clippy::disallowed_methods,
    reason = "the built-in set's fingerprint, which `manifest update` and `show` compare with; it chooses no set"
)]
pub fn embedded_identity() -> &'static SetIdentity {
    static IDENTITY: OnceLock<SetIdentity> = OnceLock::new();
    IDENTITY.get_or_init(
        || match identity(&EMBEDDED_FILES, crate::manifest::embedded()) {
            Ok(identity) => identity,
            Err(e) => panic!("the manifests built into gpu-doctor have no identity: {e}"),
        },
    )
}

/// The built-in files' text, by name.
#[must_use]
pub fn embedded_text(name: &str) -> Option<&'static str> {
    EMBEDDED_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
}

/// Rows of a manifest file: the entries of each top-level array of tables (`[[release]]`),
/// by table name. Nested arrays (`[[torch.build]]`) count with their parent row.
#[must_use]
pub fn rows(text: &str) -> Vec<(String, usize)> {
    let Ok(table) = toml::from_str::<toml::Table>(text) else {
        return Vec::new();
    };
    table
        .iter()
        .filter_map(|(key, value)| value.as_array().map(|a| (key.clone(), a.len())))
        .collect()
}

fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn embedded_pairs() -> Vec<(&'static str, &'static [u8])> {
        EMBEDDED_FILES
            .iter()
            .map(|(n, t)| (*n, t.as_bytes()))
            .collect()
    }

    #[test]
    fn the_embedded_files_are_the_embedded_set() {
        assert_eq!(
            EMBEDDED_FILES.map(|(n, _)| n),
            FILE_NAMES,
            "same files, same order"
        );
        let checked = check_set(&embedded_pairs()).expect("the built-in set checks");
        assert_eq!(&checked.identity, embedded_identity());
        let id = embedded_identity();
        assert!(id.version.starts_with(&format!("{}+", id.date)));
        assert_eq!(id.version.len(), "2026-11-29+".len() + 12);
    }

    #[test]
    fn the_version_changes_with_any_byte() {
        let mut pairs: Vec<(&str, Vec<u8>)> = embedded_pairs()
            .into_iter()
            .map(|(n, b)| (n, b.to_vec()))
            .collect();
        pairs[5].1.extend_from_slice(b"\n# one more comment\n");
        let refs: Vec<(&str, &[u8])> = pairs.iter().map(|(n, b)| (*n, b.as_slice())).collect();
        let changed = check_set(&refs).expect("still a good set");
        assert_eq!(changed.identity.date, embedded_identity().date);
        assert_ne!(changed.identity.version, embedded_identity().version);
    }

    #[test]
    fn bad_bytes_name_the_file() {
        let mut pairs = embedded_pairs();
        pairs[1] = ("gpus.toml", b"\xff\xfe");
        let error = check_set(&pairs).expect_err("not utf-8");
        assert_eq!(error.to_string(), "gpus.toml is not UTF-8 text");
        pairs[1] = ("gpus.toml", b"[meta\nschema = 1");
        let error = check_set(&pairs).expect_err("not toml");
        assert!(error.to_string().starts_with("gpus.toml: "), "{error}");
        let mut pairs = embedded_pairs();
        pairs.pop();
        let error = check_set(&pairs).expect_err("missing");
        assert!(error.to_string().contains("missing"), "{error}");
    }

    #[test]
    fn validation_problems_are_all_listed() {
        let text = embedded_text("errors.toml").expect("errors.toml").replacen(
            "source = \"",
            "source = \"\" #",
            2,
        );
        let mut pairs = embedded_pairs();
        pairs[5] = ("errors.toml", text.as_bytes());
        match check_set(&pairs) {
            Err(SetError::Invalid { problems }) => assert!(problems.len() >= 2, "{problems:?}"),
            other => panic!("expected validation problems, got {other:?}"),
        }
    }

    #[test]
    fn rows_count_top_level_tables() {
        let rows = rows("[meta]\nschema = 1\n[[a]]\nx = 1\n[[a]]\nx = 2\n[[b]]\n[[b.c]]\n");
        assert_eq!(rows, vec![("a".to_string(), 2), ("b".to_string(), 1)]);
    }
}

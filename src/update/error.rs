//! Every way a manifest command can fail, with a message that says what to do, and a stable
//! `kind` for `--json`.

use super::fetch::{FetchError, LocationError};
use super::index::IndexError;
use super::keys::KeyError;
use super::set::SetError;
use super::store::StoreError;
use crate::config::ConfigError;

/// Why `manifest update` or `manifest verify` did not succeed. The set in use is unchanged
/// whenever one of these is returned.
#[derive(Debug, thiserror::Error)]
pub enum UpdateError {
    // Usage: the user's input or settings are wrong (exit 2).
    #[error(transparent)]
    Location(#[from] LocationError),
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error(
        "gpu-doctor has no published manifest location yet (the built-in default {url} is a \
         placeholder that never resolves); pass --url URL, or set manifest_url in {config}"
    )]
    NoPublishedLocation { url: String, config: String },
    #[error(
        "no public key to check manifest sets with: gpu-doctor has no built-in key (the project \
         publishes no signed sets yet). Pass --pubkey FILE with the public key file of whoever \
         publishes your sets (scripts/publish-manifests.sh writes one), or set manifest_pubkey in \
         the config file or GPU_DOCTOR_MANIFEST_PUBKEY; to trust an old and a new key while they \
         rotate, repeat --pubkey or list both keys in the file, one a line"
    )]
    NoTrustedKey,
    #[error("cannot tell where gpu-doctor keeps its data: neither XDG_DATA_HOME nor HOME is set")]
    NoDataDir,
    #[error("{option} must be a number of seconds more than 0 and at most 3600, not {value}")]
    BadDuration { option: &'static str, value: f64 },

    // The download or the installed set is refused, or cannot be read or written (exit 1).
    #[error(transparent)]
    Fetch(#[from] FetchError),
    #[error(
        "there is no manifest index at {url}; check --url (or manifest_url in the config file)"
    )]
    NoIndex { url: String },
    #[error(
        "the index at {index} is not signed ({sig} is missing); gpu-doctor only installs signed \
         manifest sets"
    )]
    Unsigned { index: String, sig: String },
    #[error(transparent)]
    Index(#[from] IndexError),
    #[error("{file} is listed in the signed index but missing from {location}")]
    MissingFile { file: String, location: String },
    #[error("{url} is larger than the {expected} bytes the signed index lists; refusing it")]
    Oversized { url: String, expected: u64 },
    #[error(
        "{url} has {got} bytes, but the signed index lists {expected}: the file is truncated or \
         was replaced"
    )]
    SizeMismatch {
        url: String,
        got: u64,
        expected: u64,
    },
    #[error(
        "{url}: sha256 {found} does not match the signed index ({expected}): the file was \
         changed or damaged"
    )]
    Checksum {
        url: String,
        found: String,
        expected: String,
    },
    #[error(transparent)]
    Set(#[from] SetError),
    #[error("the index is dated {index} but the newest of its files is dated {files}")]
    DateMismatch { index: String, files: String },
    #[error("refusing to roll back: {what} is dated {found}, older than {than} ({current})")]
    Rollback {
        what: String,
        found: String,
        than: String,
        current: String,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl UpdateError {
    /// Whether this is the user's input (exit 2) rather than a refused or failed update (exit 1).
    #[must_use]
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            UpdateError::Location(_)
                | UpdateError::Config(_)
                | UpdateError::Key(_)
                | UpdateError::NoPublishedLocation { .. }
                | UpdateError::NoTrustedKey
                | UpdateError::NoDataDir
                | UpdateError::BadDuration { .. }
        )
    }

    /// A stable name for `--json` consumers.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            UpdateError::Location(LocationError::InsecureHttp { .. }) => "insecure_url",
            UpdateError::Location(LocationError::Offline { .. }) => "offline",
            UpdateError::Location(LocationError::Unsupported { .. }) => "bad_url",
            UpdateError::Config(_) => "config",
            UpdateError::Key(_) => "bad_key",
            UpdateError::NoPublishedLocation { .. } => "no_published_location",
            UpdateError::NoTrustedKey => "no_trusted_key",
            UpdateError::NoDataDir => "no_data_dir",
            UpdateError::BadDuration { .. } => "bad_duration",
            UpdateError::Fetch(e) => match e {
                FetchError::Timeout { .. } => "timeout",
                FetchError::Connect { .. } => "connect",
                FetchError::Status { .. } => "http_status",
                FetchError::TooLarge { .. } => "too_large",
                FetchError::Truncated { .. } => "truncated",
                FetchError::Redirect { .. } => "redirect",
                FetchError::Other { .. } => "network",
                FetchError::Io { .. } => "io",
                FetchError::NoNetwork { .. } => "no_network",
            },
            UpdateError::NoIndex { .. } => "no_index",
            UpdateError::Unsigned { .. } => "unsigned",
            UpdateError::Index(e) => match e {
                IndexError::MalformedSignature { .. } => "malformed_signature",
                IndexError::KeyMismatch { .. } => "key_mismatch",
                IndexError::BadSignature { .. } => "bad_signature",
                IndexError::Malformed { .. } => "malformed_index",
            },
            UpdateError::MissingFile { .. } => "missing_file",
            UpdateError::Oversized { .. } => "too_large",
            UpdateError::SizeMismatch { .. } => "size_mismatch",
            UpdateError::Checksum { .. } => "checksum",
            UpdateError::Set(SetError::Invalid { .. }) => "invalid_manifest",
            UpdateError::Set(_) => "malformed_manifest",
            UpdateError::DateMismatch { .. } => "date_mismatch",
            UpdateError::Rollback { .. } => "rollback",
            UpdateError::Store(_) => "install",
        }
    }
}

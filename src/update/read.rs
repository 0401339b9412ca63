//! Reading and checking a set from a [`Source`]: the signed index first, then every file it
//! lists (size, sha256), then the set loading and validating, and the no-rollback date checks.
//! Shared by `manifest update`, `manifest verify` and [`mod@super::select`].
//!
//! Depends on [`super::fetch`], [`super::index`], [`super::set`]; prints only through
//! [`Progress`].

use super::error::UpdateError;
use super::fetch::{self, Source};
use super::index::{self, INDEX_FILE, INDEX_LIMIT, Index, SIGNATURE_FILE, SIGNATURE_LIMIT};
use super::keys::PublicKey;
use super::render::{Progress, size_text};
use super::select::{Origin, Selected};
use super::set::{self, CheckedSet, SetIdentity};
use crate::date::Date;
use crate::manifest::FILE_NAMES;

/// Fetches `index.json` and its signature and verifies them with `trusted`. Returns the index
/// and both files' bytes.
pub(crate) fn read_signed_index(
    source: &mut dyn Source,
    trusted: &[PublicKey],
    progress: &Progress,
) -> Result<(Index, Vec<u8>, Vec<u8>), UpdateError> {
    let index_name = source.locate(INDEX_FILE);
    let sig_name = source.locate(SIGNATURE_FILE);
    progress.say(&format!("Fetching {index_name}"));
    let index_bytes = source
        .get(INDEX_FILE, INDEX_LIMIT)?
        .ok_or_else(|| UpdateError::NoIndex {
            url: index_name.clone(),
        })?;
    let sig_bytes = source
        .get(SIGNATURE_FILE, SIGNATURE_LIMIT)?
        .ok_or_else(|| UpdateError::Unsigned {
            index: index_name.clone(),
            sig: sig_name.clone(),
        })?;
    let index = index::verify_signed(&index_bytes, &sig_bytes, trusted, &index_name, &sig_name)?;
    progress.say(&format!(
        "Signature verified (key {}): set {}",
        index::signer(&sig_bytes).map_or_else(String::new, |k| k.id()),
        index.version
    ));
    Ok((index, index_bytes, sig_bytes))
}

/// A set's files as read, by name, in [`FILE_NAMES`] order.
pub(crate) type Files = Vec<(&'static str, Vec<u8>)>;

/// Reads every file the index lists, each no larger than its listed size, checks its size and
/// sha256, then loads and validates the set and checks its date against the index.
pub(crate) fn read_files(
    source: &mut dyn Source,
    index: &Index,
    progress: &Progress,
) -> Result<(Files, CheckedSet), UpdateError> {
    let mut files = Vec::with_capacity(FILE_NAMES.len());
    for name in FILE_NAMES {
        // `index::parse` guarantees every name is listed once.
        let Some(entry) = index.file(name) else {
            return Err(UpdateError::MissingFile {
                file: name.to_string(),
                location: INDEX_FILE.to_string(),
            });
        };
        let url = source.locate(name);
        progress.say(&format!("Downloading {name} ({})", size_text(entry.size)));
        let bytes = match source.get(name, entry.size) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => {
                return Err(UpdateError::MissingFile {
                    file: name.to_string(),
                    location: source.locate(""),
                });
            }
            Err(fetch::FetchError::TooLarge { .. }) => {
                return Err(UpdateError::Oversized {
                    url,
                    expected: entry.size,
                });
            }
            Err(e) => return Err(e.into()),
        };
        let got = bytes.len() as u64;
        if got != entry.size {
            return Err(UpdateError::SizeMismatch {
                url,
                got,
                expected: entry.size,
            });
        }
        let found = set::sha256_hex(&bytes);
        if found != entry.sha256 {
            return Err(UpdateError::Checksum {
                url,
                found,
                expected: entry.sha256.clone(),
            });
        }
        files.push((name, bytes));
    }
    let pairs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let checked = set::check_set(&pairs)?;
    if checked.identity.date.to_string() != index.date {
        return Err(UpdateError::DateMismatch {
            index: index.date.clone(),
            files: checked.identity.date.to_string(),
        });
    }
    Ok((files, checked))
}

/// No rollback, for the whole set: its date may not be before the built-in set's, nor the
/// installed set's when that is in use. Checked from the signed index, before any download.
pub(crate) fn check_set_date(date: Date, in_use: &Selected) -> Result<(), UpdateError> {
    let embedded = set::embedded_identity();
    let (than, current) = if date < embedded.date {
        ("the set built into this gpu-doctor", embedded.date)
    } else if in_use.origin == Origin::Installed && date < in_use.identity.date {
        ("the installed set", in_use.identity.date)
    } else {
        return Ok(());
    };
    Err(UpdateError::Rollback {
        what: "the published set".to_string(),
        found: date.to_string(),
        than: than.to_string(),
        current: current.to_string(),
    })
}

/// No rollback, file by file: a newer set may still carry one file older than the built-in
/// copy (published from a stale branch), which would silently drop facts this binary knows.
pub(crate) fn check_file_dates(new: &SetIdentity) -> Result<(), UpdateError> {
    let embedded = set::embedded_identity();
    for file in &new.files {
        let Some(built_in) = embedded.file(file.name) else {
            continue;
        };
        if Date::parse(&file.updated) < Date::parse(&built_in.updated) {
            return Err(UpdateError::Rollback {
                what: format!("{} in the published set", file.name),
                found: file.updated.clone(),
                than: format!("the built-in {}", file.name),
                current: built_in.updated.clone(),
            });
        }
    }
    Ok(())
}

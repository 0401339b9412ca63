//! The signed index of a published manifest set: `index.json` (version, date, and each file's
//! size and sha256) and `index.json.sig` (who signed it, and the ed25519 signature of the
//! index's exact bytes).
//!
//! ```json
//! {"format": 1, "version": "2026-11-29+1a2b3c4d5e6f", "date": "2026-11-29",
//!  "files": [{"name": "cuda.toml", "size": 34281, "sha256": "…"}, …]}
//! ```
//! ```json
//! {"algorithm": "ed25519", "public_key": "<64 hex>", "signature": "<128 hex>"}
//! ```
//! [`verify_signed`] checks the signature before it parses a byte of the index, so a forged
//! index never reaches the JSON parser, let alone decides what to download.
//!
//! Pure. Depends on `serde_json` and [`super::keys`].

use serde::{Deserialize, Serialize};

use super::keys::{PublicKey, SecretKey, hex, unhex};
use super::set::{SetIdentity, set_version};
use crate::date::Date;
use crate::manifest::FILE_NAMES;

/// The index format this build reads and writes. Fields may be added without a bump (readers
/// ignore what they do not know); a change of meaning bumps it, and older builds refuse it.
pub const INDEX_FORMAT: u32 = 1;

/// The index's file name in a published folder and in the installed set.
pub const INDEX_FILE: &str = "index.json";
/// The signature's file name, next to the index.
pub const SIGNATURE_FILE: &str = "index.json.sig";

/// Most bytes accepted for `index.json` (a real one is under 1 KiB).
pub const INDEX_LIMIT: u64 = 64 * 1024;
/// Most bytes accepted for `index.json.sig` (a real one is about 250 bytes).
pub const SIGNATURE_LIMIT: u64 = 4 * 1024;
/// Most bytes accepted for one manifest file (the largest is about 70 KiB today).
pub const FILE_LIMIT: u64 = 4 * 1024 * 1024;
/// Most bytes accepted for a whole set.
pub const TOTAL_LIMIT: u64 = 16 * 1024 * 1024;

/// `index.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Index {
    /// See [`INDEX_FORMAT`].
    pub format: u32,
    /// The set's version; see [`super::set`].
    pub version: String,
    /// The set's date (`YYYY-MM-DD`): its files' newest `updated`.
    pub date: String,
    pub files: Vec<IndexFile>,
}

/// One file the index lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexFile {
    pub name: String,
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

/// `index.json.sig`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureFile {
    /// Always `ed25519`.
    pub algorithm: String,
    /// The signer's public key (hex). Only used to name the signer when it is not the trusted
    /// key; the signature is always checked against the trusted key.
    pub public_key: String,
    /// 64 bytes, hex.
    pub signature: String,
}

/// Why an index is refused.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("{sig} is not a gpu-doctor signature file: {reason}")]
    MalformedSignature { sig: String, reason: String },
    #[error(
        "the index is signed by key {found}, not by a trusted key ({trusted}); if you trust that \
         publisher, pass --pubkey with its public key file (or set manifest_pubkey in the config file)"
    )]
    KeyMismatch { found: String, trusted: String },
    #[error(
        "the signature of {index} does not verify with key {key}: the index was changed after it \
         was signed, or the signature is damaged"
    )]
    BadSignature { index: String, key: String },
    #[error("{index} is not a valid manifest index: {reason}")]
    Malformed { index: String, reason: String },
}

/// Checks `signature` over `index` with `trusted`, then parses and checks the index.
/// `index_name` / `sig_name` are the URLs or paths, for messages.
///
/// # Errors
/// [`IndexError`]: a malformed signature file, another signer, a signature that does not
/// verify (all found before the index is parsed), or a malformed index.
pub fn verify_signed(
    index: &[u8],
    signature: &[u8],
    trusted: &[PublicKey],
    index_name: &str,
    sig_name: &str,
) -> Result<Index, IndexError> {
    let malformed = |reason: String| IndexError::MalformedSignature {
        sig: sig_name.to_string(),
        reason,
    };
    let file: SignatureFile =
        serde_json::from_slice(signature).map_err(|e| malformed(e.to_string()))?;
    if file.algorithm != "ed25519" {
        return Err(malformed(format!(
            "algorithm `{}` is not supported (only ed25519)",
            file.algorithm
        )));
    }
    let bytes: [u8; 64] = unhex(file.signature.trim())
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| malformed("`signature` is not 64 bytes of hex".to_string()))?;
    let signer =
        PublicKey::parse(&file.public_key, "`public_key`").map_err(|e| malformed(e.to_string()))?;
    // The file names its signer; only a trusted key is ever used to check the signature.
    let Some(trusted) = trusted.iter().find(|k| **k == signer) else {
        return Err(IndexError::KeyMismatch {
            found: signer.id(),
            trusted: trusted
                .iter()
                .map(PublicKey::id)
                .collect::<Vec<_>>()
                .join(", "),
        });
    };
    if !trusted.verifies(index, &bytes) {
        return Err(IndexError::BadSignature {
            index: index_name.to_string(),
            key: trusted.id(),
        });
    }
    parse(index, index_name)
}

/// The key a signature file names as its signer; after [`verify_signed`] accepted it, the
/// trusted key that signed.
#[must_use]
pub fn signer(signature: &[u8]) -> Option<PublicKey> {
    let file: SignatureFile = serde_json::from_slice(signature).ok()?;
    PublicKey::parse(&file.public_key, "`public_key`").ok()
}

/// Parses an index and checks it: the format, a real date, a version that matches the listed
/// digests, every manifest file exactly once with a well-formed digest, and sizes within
/// [`FILE_LIMIT`] / [`TOTAL_LIMIT`] (so the limits hold before anything is downloaded).
///
/// # Errors
/// [`IndexError::Malformed`] naming what is wrong.
pub fn parse(bytes: &[u8], name: &str) -> Result<Index, IndexError> {
    let malformed = |reason: String| IndexError::Malformed {
        index: name.to_string(),
        reason,
    };
    let index: Index = serde_json::from_slice(bytes).map_err(|e| malformed(e.to_string()))?;
    if index.format != INDEX_FORMAT {
        return Err(malformed(format!(
            "format {} is not supported (this gpu-doctor reads format {INDEX_FORMAT}; a newer \
             gpu-doctor may read it)",
            index.format
        )));
    }
    let date = Date::parse(&index.date)
        .ok_or_else(|| malformed(format!("date `{}` is not a YYYY-MM-DD date", index.date)))?;
    let mut total = 0u64;
    for (i, file) in index.files.iter().enumerate() {
        if !FILE_NAMES.contains(&file.name.as_str()) {
            return Err(malformed(format!(
                "`{}` is not a manifest file (expected: {})",
                file.name,
                FILE_NAMES.join(", ")
            )));
        }
        if index.files[..i].iter().any(|f| f.name == file.name) {
            return Err(malformed(format!("`{}` is listed twice", file.name)));
        }
        if file.sha256.len() != 64
            || !file
                .sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(malformed(format!(
                "the sha256 of `{}` is not 64 lowercase hex digits",
                file.name
            )));
        }
        if file.size > FILE_LIMIT {
            return Err(malformed(format!(
                "`{}` is {} bytes, more than the {FILE_LIMIT}-byte limit for one file",
                file.name, file.size
            )));
        }
        total += file.size;
    }
    if let Some(missing) = FILE_NAMES
        .iter()
        .find(|n| !index.files.iter().any(|f| f.name == **n))
    {
        return Err(malformed(format!("`{missing}` is not listed")));
    }
    if total > TOTAL_LIMIT {
        return Err(malformed(format!(
            "the files add up to {total} bytes, more than the {TOTAL_LIMIT}-byte limit for a set"
        )));
    }
    let digests: Vec<(&str, &str)> = index
        .files
        .iter()
        .map(|f| (f.name.as_str(), f.sha256.as_str()))
        .collect();
    let expected = set_version(date, &digests);
    if index.version != expected {
        return Err(malformed(format!(
            "version `{}` does not match its date and files (expected `{expected}`)",
            index.version.escape_debug()
        )));
    }
    Ok(index)
}

impl Index {
    /// The index describing a set.
    #[must_use]
    pub fn describe(identity: &SetIdentity) -> Index {
        Index {
            format: INDEX_FORMAT,
            version: identity.version.clone(),
            date: identity.date.to_string(),
            files: identity
                .files
                .iter()
                .map(|f| IndexFile {
                    name: f.name.to_string(),
                    size: f.size,
                    sha256: f.sha256.clone(),
                })
                .collect(),
        }
    }

    /// The index as published: pretty JSON and a final newline.
    #[must_use]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).unwrap_or_default();
        bytes.push(b'\n');
        bytes
    }

    /// The entry for `name`.
    #[must_use]
    pub fn file(&self, name: &str) -> Option<&IndexFile> {
        self.files.iter().find(|f| f.name == name)
    }
}

/// `index.json.sig` for `index` signed with `key`.
#[must_use]
pub fn sign(index: &[u8], key: &SecretKey) -> Vec<u8> {
    let file = SignatureFile {
        algorithm: "ed25519".to_string(),
        public_key: key.public().to_hex(),
        signature: hex(&key.sign(index)),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::update::set::embedded_identity;

    fn key(n: u8) -> SecretKey {
        SecretKey::from_seed(&[n; 32])
    }

    fn signed() -> (Vec<u8>, Vec<u8>) {
        let index = Index::describe(embedded_identity()).to_bytes();
        let sig = sign(&index, &key(1));
        (index, sig)
    }

    fn verify(index: &[u8], sig: &[u8], trusted: &SecretKey) -> Result<Index, IndexError> {
        verify_signed(
            index,
            sig,
            &[trusted.public()],
            "index.json",
            "index.json.sig",
        )
    }

    #[test]
    fn a_signed_index_verifies_and_describes_the_set() {
        let (index, sig) = signed();
        let parsed = verify(&index, &sig, &key(1)).expect("verifies");
        assert_eq!(parsed, Index::describe(embedded_identity()));
        assert_eq!(parsed.files.len(), FILE_NAMES.len());
    }

    #[test]
    fn another_signer_is_a_key_mismatch() {
        let (index, sig) = signed();
        let error = verify(&index, &sig, &key(2)).expect_err("other key");
        assert!(matches!(error, IndexError::KeyMismatch { .. }), "{error}");
        assert!(error.to_string().contains(&key(1).public().id()));
        assert!(error.to_string().contains("--pubkey"));
    }

    #[test]
    fn a_changed_index_or_signature_does_not_verify() {
        let (mut index, sig) = signed();
        let at = index.len() / 2;
        index[at] ^= 1;
        let error = verify(&index, &sig, &key(1)).expect_err("tampered");
        assert!(matches!(error, IndexError::BadSignature { .. }), "{error}");

        let (index, sig) = signed();
        let mut file: SignatureFile = serde_json::from_slice(&sig).expect("sig json");
        // Another last byte (whatever the signature's own was: a set that happens to sign to
        // a final 00 must not make this a no-op).
        let last = if file.signature.ends_with("00") {
            "01"
        } else {
            "00"
        };
        file.signature = format!("{}{last}", &file.signature[..126]);
        let sig = serde_json::to_vec(&file).expect("json");
        assert!(matches!(
            verify(&index, &sig, &key(1)),
            Err(IndexError::BadSignature { .. })
        ));
    }

    #[test]
    fn a_signature_claiming_the_trusted_key_still_has_to_verify() {
        let index = Index::describe(embedded_identity()).to_bytes();
        let mut file: SignatureFile =
            serde_json::from_slice(&sign(&index, &key(2))).expect("sig json");
        file.public_key = key(1).public().to_hex();
        let sig = serde_json::to_vec(&file).expect("json");
        assert!(matches!(
            verify(&index, &sig, &key(1)),
            Err(IndexError::BadSignature { .. })
        ));
    }

    #[test]
    fn malformed_signature_files_are_refused_before_the_index_is_read() {
        let index = b"this is not even json";
        for sig in [
            &b"not json"[..],
            br#"{"algorithm":"rsa","public_key":"","signature":""}"#,
            br#"{"algorithm":"ed25519","public_key":"00","signature":"00"}"#,
        ] {
            let error = verify(index, sig, &key(1)).expect_err("malformed");
            assert!(
                matches!(error, IndexError::MalformedSignature { .. }),
                "{error}"
            );
        }
        // A valid signature over bytes that are not an index: the index is then refused.
        let sig = sign(index, &key(1));
        let error = verify(index, &sig, &key(1)).expect_err("not json");
        assert!(matches!(error, IndexError::Malformed { .. }), "{error}");
    }

    #[test]
    fn index_content_is_checked() {
        let good = Index::describe(embedded_identity());
        let check = |edit: &dyn Fn(&mut Index)| {
            let mut index = good.clone();
            edit(&mut index);
            parse(&serde_json::to_vec(&index).expect("json"), "i")
                .expect_err("refused")
                .to_string()
        };
        assert!(check(&|i| i.format = 2).contains("format 2 is not supported"));
        assert!(check(&|i| i.date = "2026-02-30".into()).contains("not a YYYY-MM-DD"));
        assert!(check(&|i| i.files[0].name = "evil.toml".into()).contains("not a manifest file"));
        assert!(check(&|i| i.files[1].name = "cuda.toml".into()).contains("listed twice"));
        assert!(
            check(&|i| {
                i.files.pop();
            })
            .contains("is not listed")
        );
        assert!(check(&|i| i.files[0].sha256 = "ABC".into()).contains("64 lowercase hex"));
        assert!(check(&|i| i.files[0].size = FILE_LIMIT + 1).contains("limit for one file"));
        assert!(
            check(&|i| i.version = "9999-01-01+000000000000".into()).contains("does not match")
        );
        assert!(check(&|i| i.files[0].sha256 = "0".repeat(64)).contains("does not match"));
    }

    #[test]
    fn unknown_fields_are_ignored_for_forward_compatibility() {
        let mut value = serde_json::to_value(Index::describe(embedded_identity())).expect("json");
        value["mirrors"] = serde_json::json!(["https://example.org"]);
        assert!(parse(&serde_json::to_vec(&value).expect("json"), "i").is_ok());
    }
}

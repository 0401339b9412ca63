//! Ed25519 keys for manifest indexes: key files (hex or base64 text, one or several public keys
//! a file), and signing / verifying an index's exact bytes.
//!
//! No key is built in. The key that was once built in had its secret made on a development
//! machine that is gone, so nothing could ever have been signed with it; until the project
//! publishes sets (and a key whose secret is kept offline, see scripts/publish-manifests.sh),
//! `manifest update` trusts only the keys the user names (`--pubkey`, `manifest_pubkey`).
//! Several trusted keys at once are what a rotation needs: clients trust the old and the new
//! public key during the hand-over, and sets signed by either install.
//!
//! What is signed is [`SIGNING_CONTEXT`] followed by the bytes of `index.json` as served: no
//! re-serialising, so no canonical-JSON rules to get wrong, and the context keeps a signature
//! made for an index from being valid for anything else the same key might ever sign.
//!
//! Pure apart from [`read_key_file`] / `write_key_file`. Depends on ed25519-dalek and base64.

use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};

/// Prefixed to the index bytes before signing; see the module docs.
pub const SIGNING_CONTEXT: &[u8] = b"gpu-doctor manifest index v1\n";

/// Why a key could not be read or used.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error("cannot read key file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{what} is not an ed25519 {kind} key: expected 32 bytes as 64 hex digits or 44 base64 \
         characters (lines starting with # are comments)"
    )]
    Format { what: String, kind: &'static str },
    #[error("{what} is not a valid ed25519 public key (not a point on the curve)")]
    NotOnCurve { what: String },
    #[error("cannot write key file {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A public key that verifies index signatures.
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// Every key of a key file's text: each line that is not blank or a `#` comment holds one
    /// key (64 hex digits or 44 base64 characters). A file listing the old and the new key
    /// trusts both, for a rotation's hand-over window.
    ///
    /// # Errors
    /// When a line is not a key, or no line is.
    pub fn parse_all(text: &str, what: &str) -> Result<Vec<PublicKey>, KeyError> {
        let mut keys: Vec<PublicKey> = Vec::new();
        for line in text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
        {
            let key = PublicKey::parse(line, what)?;
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err(KeyError::Format {
                what: what.to_string(),
                kind: "public",
            });
        }
        Ok(keys)
    }

    /// Parses a key from text: 64 hex digits or standard base64 of the 32 bytes. `what` names
    /// the text's origin for the error message.
    ///
    /// # Errors
    /// When the text does not hold 32 bytes, or they are not a curve point.
    pub fn parse(text: &str, what: &str) -> Result<PublicKey, KeyError> {
        let bytes = decode_key_text(text).ok_or_else(|| KeyError::Format {
            what: what.to_string(),
            kind: "public",
        })?;
        VerifyingKey::from_bytes(&bytes)
            .map(PublicKey)
            .map_err(|_| KeyError::NotOnCurve {
                what: what.to_string(),
            })
    }

    /// Lowercase hex of the 32 bytes, as key files and `index.json.sig` hold it.
    #[must_use]
    pub fn to_hex(&self) -> String {
        hex(self.0.as_bytes())
    }

    /// A short id for messages: the first 16 hex digits, enough to tell keys apart by eye.
    #[must_use]
    pub fn id(&self) -> String {
        self.to_hex()[..16].to_string()
    }

    /// Whether `signature` is this key's signature of `index` (under [`SIGNING_CONTEXT`]).
    /// Strict verification: refuses the malleable and small-order forms that plain ed25519
    /// accepts, since nothing here needs them.
    #[must_use]
    pub fn verifies(&self, index: &[u8], signature: &[u8; 64]) -> bool {
        let signature = Signature::from_bytes(signature);
        self.0
            .verify_strict(&signed_message(index), &signature)
            .is_ok()
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.to_hex())
    }
}

/// A signing key: the 32-byte ed25519 seed. Its `Debug` does not print the secret.
pub struct SecretKey(SigningKey);

impl SecretKey {
    /// A key from a 32-byte seed (from `/dev/urandom` when generating).
    #[must_use]
    pub fn from_seed(seed: &[u8; 32]) -> SecretKey {
        SecretKey(SigningKey::from_bytes(seed))
    }

    /// Parses a seed from text: 64 hex digits or base64 of the 32 bytes.
    ///
    /// # Errors
    /// When the text does not hold 32 bytes.
    pub fn parse(text: &str, what: &str) -> Result<SecretKey, KeyError> {
        decode_key_text(text)
            .map(|seed| SecretKey::from_seed(&seed))
            .ok_or_else(|| KeyError::Format {
                what: what.to_string(),
                kind: "secret",
            })
    }

    /// A fresh key from 32 bytes of `/dev/urandom`.
    ///
    /// # Errors
    /// When `/dev/urandom` cannot be read.
    #[expect(
        clippy::disallowed_methods,
        reason = "randomness for a new signing key, not a fact of the examined machine"
    )]
    pub fn generate() -> std::io::Result<SecretKey> {
        use std::io::Read;
        let mut seed = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut seed)?;
        let key = SecretKey::from_seed(&seed);
        seed.fill(0);
        Ok(key)
    }

    #[must_use]
    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// The signature of `index` under [`SIGNING_CONTEXT`].
    #[must_use]
    pub fn sign(&self, index: &[u8]) -> [u8; 64] {
        self.0.sign(&signed_message(index)).to_bytes()
    }

    /// Lowercase hex of the seed, for the secret key file.
    fn to_hex(&self) -> String {
        hex(self.0.as_bytes())
    }
}

impl fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SecretKey(public {})", self.public().to_hex())
    }
}

fn signed_message(index: &[u8]) -> Vec<u8> {
    let mut message = Vec::with_capacity(SIGNING_CONTEXT.len() + index.len());
    message.extend_from_slice(SIGNING_CONTEXT);
    message.extend_from_slice(index);
    message
}

/// Reads a key file's text (a path given by the user, so not through the host's root).
///
/// # Errors
/// When the file cannot be read.
pub fn read_key_file(path: &Path) -> Result<String, KeyError> {
    // A key file is a line of text; 64 KiB is far more than any.
    crate::host::fs::read_regular(path, 64 * 1024)
        .map(|(bytes, _)| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|source| KeyError::Read {
            path: path.to_path_buf(),
            source,
        })
}

/// Reads a public key file.
///
/// # Errors
/// When it cannot be read or holds no public key.
pub fn read_public_key(path: &Path) -> Result<PublicKey, KeyError> {
    PublicKey::parse(&read_key_file(path)?, &path.display().to_string())
}

/// Reads every key of a public key file (one a line; see [`PublicKey::parse_all`]).
///
/// # Errors
/// When it cannot be read, or a line is not a key, or none is.
pub fn read_public_keys(path: &Path) -> Result<Vec<PublicKey>, KeyError> {
    PublicKey::parse_all(&read_key_file(path)?, &path.display().to_string())
}

/// Reads a secret key file.
///
/// # Errors
/// When it cannot be read or holds no secret key.
pub fn read_secret_key(path: &Path) -> Result<SecretKey, KeyError> {
    SecretKey::parse(&read_key_file(path)?, &path.display().to_string())
}

/// Writes a public key file: a comment line and the hex key.
///
/// # Errors
/// When the file cannot be written.
pub fn write_public_key(path: &Path, key: &PublicKey) -> Result<(), KeyError> {
    let text = format!(
        "# gpu-doctor manifest public key (ed25519, hex); trust it with --pubkey or manifest_pubkey\n{}\n",
        key.to_hex()
    );
    write_key_file(path, &text, false)
}

/// Writes a secret key file readable by its owner only, refusing to replace an existing file
/// (overwriting a signing key by accident cannot be undone).
///
/// # Errors
/// When the file exists or cannot be written.
pub fn write_secret_key(path: &Path, key: &SecretKey) -> Result<(), KeyError> {
    let text = format!(
        "# gpu-doctor manifest signing key (ed25519 seed, hex). SECRET: keep it out of any repository.\n{}\n",
        key.to_hex()
    );
    write_key_file(path, &text, true)
}

fn write_key_file(path: &Path, text: &str, secret: bool) -> Result<(), KeyError> {
    let error = |source| KeyError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true);
    if secret {
        use std::os::unix::fs::OpenOptionsExt;
        options.create_new(true).mode(0o600);
    } else {
        options.create(true).truncate(true);
    }
    let mut file = options.open(path).map_err(error)?;
    file.write_all(text.as_bytes()).map_err(error)?;
    file.sync_all().map_err(error)
}

/// The 32 bytes of a key file: the first line that is not blank or a `#` comment, as hex or
/// base64.
fn decode_key_text(text: &str) -> Option<[u8; 32]> {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let bytes = if line.len() == 64 {
        unhex(line)?
    } else {
        base64_decode(line)?
    };
    bytes.try_into().ok()
}

/// Lowercase hex.
#[must_use]
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Hex (either case) to bytes.
#[must_use]
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    text.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digit = |c: u8| char::from(c).to_digit(16);
            u8::try_from(digit(pair[0])? * 16 + digit(pair[1])?).ok()
        })
        .collect()
}

/// Standard base64 (RFC 4648 §4, `=` padding required). Unused low bits in the last character
/// are let through, as they always were here: a hand-edited key whose final character differs
/// only in those bits still names the same 32 bytes.
const KEY_BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new()
        .with_decode_padding_mode(base64::engine::DecodePaddingMode::RequireCanonical)
        .with_decode_allow_trailing_bits(true),
);

/// Base64 key text to bytes; `None` for anything [`KEY_BASE64`] refuses, and for nothing.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    if text.is_empty() {
        return None;
    }
    KEY_BASE64.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEED: [u8; 32] = [7; 32];

    #[test]
    fn a_key_file_may_list_several_keys_for_a_rotation() {
        let old = SecretKey::from_seed(&SEED).public();
        let new = SecretKey::from_seed(&[9; 32]).public();
        let text = format!(
            "# old, until 2027-01-31\n{}\n\n# new\n{}\n{}\n",
            old.to_hex(),
            base64_encode_for_test(new.0.as_bytes()),
            old.to_hex()
        );
        assert_eq!(
            PublicKey::parse_all(&text, "t").ok(),
            Some(vec![old.clone(), new])
        );
        assert_eq!(
            PublicKey::parse_all(&old.to_hex(), "t").ok(),
            Some(vec![old])
        );
        let bad = PublicKey::parse_all("# nothing\n", "keys.pub").expect_err("no key");
        assert!(bad.to_string().contains("keys.pub"), "{bad}");
        assert!(PublicKey::parse_all("00\n", "t").is_err());
    }

    #[test]
    fn sign_and_verify_round_trip_and_bind_the_bytes() {
        let secret = SecretKey::from_seed(&SEED);
        let public = secret.public();
        let index = br#"{"format":1}"#;
        let signature = secret.sign(index);
        assert!(public.verifies(index, &signature));
        assert!(!public.verifies(br#"{"format":2}"#, &signature));
        let other = SecretKey::from_seed(&[8; 32]).public();
        assert!(!other.verifies(index, &signature));
        // A plain ed25519 signature of the bare bytes (no context) is not accepted.
        let bare = secret.0.sign(index).to_bytes();
        assert!(!public.verifies(index, &bare));
    }

    #[test]
    fn key_text_in_hex_or_base64_with_comments() {
        let public = SecretKey::from_seed(&SEED).public();
        let hex_text = format!("# comment\n\n  {}  \n", public.to_hex());
        assert_eq!(PublicKey::parse(&hex_text, "t").ok(), Some(public.clone()));
        assert_eq!(
            PublicKey::parse(&public.to_hex().to_uppercase(), "t").ok(),
            Some(public.clone())
        );
        // Base64 of the same 32 bytes.
        let b64 = base64_encode_for_test(public.0.as_bytes());
        assert_eq!(b64.len(), 44);
        assert_eq!(PublicKey::parse(&b64, "t").ok(), Some(public));
    }

    #[test]
    fn bad_key_text_is_refused_with_its_origin() {
        for text in [
            "",
            "# only a comment",
            "abcd",
            &"g".repeat(64),
            &"00".repeat(31),
        ] {
            let error = PublicKey::parse(text, "k.pub").expect_err(text);
            assert!(
                error
                    .to_string()
                    .starts_with("k.pub is not an ed25519 public key")
            );
        }
        assert!(SecretKey::parse("xyz", "k.key").is_err());
    }

    #[test]
    fn base64_decoding_follows_rfc4648() {
        assert_eq!(base64_decode("Zm9vYmFy").as_deref(), Some(&b"foobar"[..]));
        assert_eq!(base64_decode("Zm9vYg==").as_deref(), Some(&b"foob"[..]));
        assert_eq!(base64_decode("Zm9vYmE=").as_deref(), Some(&b"fooba"[..]));
        assert_eq!(base64_decode("Zm9v").as_deref(), Some(&b"foo"[..]));
        for bad in ["Zm9", "Zm=v", "Z===", "Zm9v!A==", "Zg==Zg=="] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn base64_keeps_accepting_unused_low_bits() {
        // "Zg==" is canonical for "f"; "Zh==" differs only in the four unused bits.
        assert_eq!(base64_decode("Zh==").as_deref(), Some(&b"f"[..]));
        assert_eq!(base64_decode(""), None);
        assert_eq!(base64_decode("Zm9v\n"), None);
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(unhex("000fFF"), Some(vec![0, 15, 255]));
        assert_eq!(unhex("0"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn secret_debug_does_not_print_the_seed() {
        let secret = SecretKey::from_seed(&SEED);
        assert!(!format!("{secret:?}").contains(&hex(&SEED)));
    }

    #[test]
    fn secret_key_files_are_private_and_never_overwritten() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("k.key");
        let secret = SecretKey::from_seed(&SEED);
        write_secret_key(&path, &secret).expect("written");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(write_secret_key(&path, &secret).is_err());
        let back = read_secret_key(&path).expect("read back");
        assert_eq!(back.public(), secret.public());
        let pub_path = dir.path().join("k.pub");
        write_public_key(&pub_path, &secret.public()).expect("pub written");
        assert_eq!(
            read_public_key(&pub_path).expect("pub read"),
            secret.public()
        );
    }

    fn base64_encode_for_test(bytes: &[u8]) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }
}

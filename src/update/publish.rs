//! The publishing side (hidden subcommands behind `scripts/publish-manifests.sh`): check a
//! folder of manifest files, write them with a signed index into a folder any static host can
//! serve, and make signing keys.
//!
//! The checks are the client's: a set that `manifest update` would refuse (does not load, does
//! not validate) is never published.
//!
//! Depends on [`super::set`], [`super::index`], [`super::keys`].

use std::path::{Path, PathBuf};

use super::index::{INDEX_FILE, Index, SIGNATURE_FILE, sign};
use super::keys::{self, KeyError, PublicKey, SecretKey};
use super::set::{SetError, SetIdentity, check_set};
use crate::manifest::FILE_NAMES;

/// The public key file a throw-away key leaves in the output folder.
pub const THROWAWAY_PUBLIC_KEY: &str = "manifest-signing.pub";

/// Why publishing failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("refusing to publish {}: {source}", dir.display())]
    Set {
        dir: PathBuf,
        #[source]
        source: SetError,
    },
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("cannot make a signing key from /dev/urandom: {0}")]
    Random(std::io::Error),
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What was published.
#[derive(Debug)]
pub struct Published {
    pub identity: SetIdentity,
    pub signer: PublicKey,
    /// The throw-away public key file, when no key was given.
    pub public_key_file: Option<PathBuf>,
}

/// Writes the manifest files of `from`, `index.json` and `index.json.sig` into `out`, signed
/// with the secret key in `key_file`, or with a throw-away key whose public half is left in
/// `out` as [`THROWAWAY_PUBLIC_KEY`] (for tests and private mirrors).
///
/// The manifest files are written first, then the signature, then the index: a client reading
/// the folder while it is written gets either a consistent set or a mismatch that it refuses
/// (and can retry), never a mix that it accepts.
///
/// # Errors
/// [`PublishError`]: unreadable files, a set that fails the client's checks, a bad key file,
/// or a write failure.
#[expect(
    clippy::disallowed_methods,
    reason = "the maintainer's manifest folder (`manifest publish --from`) on this machine, not the examined one"
)]
pub fn publish(
    from: &Path,
    out: &Path,
    key_file: Option<&Path>,
) -> Result<Published, PublishError> {
    let mut files = Vec::with_capacity(FILE_NAMES.len());
    for name in FILE_NAMES {
        let path = from.join(name);
        let bytes = std::fs::read(&path).map_err(|source| PublishError::Read { path, source })?;
        files.push((name, bytes));
    }
    let pairs: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    let checked = check_set(&pairs).map_err(|source| PublishError::Set {
        dir: from.to_path_buf(),
        source,
    })?;
    let (key, throwaway) = match key_file {
        Some(path) => (keys::read_secret_key(path)?, false),
        None => (SecretKey::generate().map_err(PublishError::Random)?, true),
    };
    std::fs::create_dir_all(out).map_err(|source| PublishError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let write = |name: &str, bytes: &[u8]| {
        let path = out.join(name);
        std::fs::write(&path, bytes).map_err(|source| PublishError::Write { path, source })
    };
    for (name, bytes) in &files {
        write(name, bytes)?;
    }
    let index = Index::describe(&checked.identity).to_bytes();
    write(SIGNATURE_FILE, &sign(&index, &key))?;
    write(INDEX_FILE, &index)?;
    let public_key_file = if throwaway {
        let path = out.join(THROWAWAY_PUBLIC_KEY);
        keys::write_public_key(&path, &key.public())?;
        Some(path)
    } else {
        None
    };
    Ok(Published {
        identity: checked.identity,
        signer: key.public(),
        public_key_file,
    })
}

/// Makes a signing key pair: the secret seed in `secret` (mode 0600, never overwritten) and
/// the public key next to it with the extension `.pub`.
///
/// # Errors
/// When `/dev/urandom` cannot be read or a file cannot be written.
pub fn keygen(secret: &Path) -> Result<(PublicKey, PathBuf), PublishError> {
    let key = SecretKey::generate().map_err(PublishError::Random)?;
    keys::write_secret_key(secret, &key)?;
    let public = secret.with_extension("pub");
    keys::write_public_key(&public, &key.public())?;
    Ok((key.public(), public))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::update::index::verify_signed;
    use crate::update::set::embedded_identity;

    fn manifests_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests")
    }

    #[test]
    fn publishing_the_repository_set_gives_the_built_in_version_and_a_verifiable_index() {
        let out = tempfile::tempdir().expect("tempdir");
        let published = publish(&manifests_dir(), out.path(), None).expect("published");
        assert_eq!(&published.identity, embedded_identity());
        let public = keys::read_public_key(
            published
                .public_key_file
                .as_deref()
                .expect("throw-away key file"),
        )
        .expect("public key");
        assert_eq!(public, published.signer);
        let index = std::fs::read(out.path().join(INDEX_FILE)).expect("index");
        let sig = std::fs::read(out.path().join(SIGNATURE_FILE)).expect("sig");
        let parsed =
            verify_signed(&index, &sig, std::slice::from_ref(&public), "i", "s").expect("verifies");
        assert_eq!(parsed.version, embedded_identity().version);
        for name in FILE_NAMES {
            assert!(out.path().join(name).is_file(), "{name}");
        }
    }

    #[test]
    fn a_given_key_signs_and_no_public_key_file_is_left() {
        let dir = tempfile::tempdir().expect("tempdir");
        let secret = dir.path().join("k.key");
        let (public, public_file) = keygen(&secret).expect("keygen");
        assert_eq!(keys::read_public_key(&public_file).expect("pub"), public);
        assert!(keygen(&secret).is_err(), "never overwrites a secret key");
        let out = dir.path().join("out");
        let published = publish(&manifests_dir(), &out, Some(&secret)).expect("published");
        assert_eq!(published.signer, public);
        assert!(published.public_key_file.is_none());
        assert!(!out.join(THROWAWAY_PUBLIC_KEY).exists());
    }

    #[test]
    fn a_broken_set_is_not_published() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in FILE_NAMES {
            std::fs::copy(manifests_dir().join(name), dir.path().join(name)).expect("copy");
        }
        std::fs::write(dir.path().join("gpus.toml"), "[meta]\nschema = 1\n").expect("write");
        let out = dir.path().join("out");
        let error = publish(dir.path(), &out, None).expect_err("refused");
        assert!(
            error.to_string().starts_with("refusing to publish"),
            "{error}"
        );
        assert!(!out.exists(), "nothing written");
    }
}

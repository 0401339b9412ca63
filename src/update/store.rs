//! The installed manifest set: `<data dir>/gpu-doctor/manifests/`, replaced as a whole or not
//! at all.
//!
//! An update writes the new set into a temporary folder next to `manifests/` (same file
//! system, so a rename is atomic), syncs it, then swaps the two folders with one atomic
//! exchange (`RENAME_EXCHANGE`, through rustix): at every instant `manifests/` is either the
//! complete old set or the complete new one. A crash before the swap leaves the old set and a temporary folder,
//! which the next update removes. Where the exchange is not supported (not Linux, or a file
//! system without it), two renames are used and a failure of the second puts the old set back.
//!
//! Holds: `index.json`, `index.json.sig` (as downloaded, so `manifest verify` can check them
//! again), the manifest files, and `origin.json` (where and when it came from; informational).
//!
//! Depends on `std::fs`, tempfile and rustix; the caller decides the data folder.

#![allow(
    clippy::disallowed_methods,
    reason = "the installed set's folder, already a real path (config::Dirs resolves it through the Host); the store reads and replaces its own files"
)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The installed set's folder name inside the data folder.
pub const SET_DIR: &str = "manifests";
/// Where and when an installed set came from.
pub const ORIGIN_FILE: &str = "origin.json";
/// Temporary folders of unfinished updates start with this.
const TEMP_PREFIX: &str = ".manifests.tmp-";
/// Temporary folders older than this are leftovers of interrupted updates.
const STALE_TEMP: Duration = Duration::from_secs(3600);

/// Why the installed set could not be written or read.
#[derive(Debug, thiserror::Error)]
#[error("cannot {action} {}: {source}", path.display())]
pub struct StoreError {
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// `origin.json`: informational, never trusted for a decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// The URL or folder it was downloaded from.
    pub source: String,
    /// The day it was installed (`YYYY-MM-DD`).
    pub installed: String,
    /// The public key (hex) its signature was checked with.
    pub key: String,
}

/// The data folder that holds the installed set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    data_dir: PathBuf,
}

impl Store {
    /// `data_dir` is `…/gpu-doctor` (see [`crate::config::Dirs`]).
    #[must_use]
    pub fn new(data_dir: PathBuf) -> Store {
        Store { data_dir }
    }

    /// The installed set's folder.
    #[must_use]
    pub fn set_dir(&self) -> PathBuf {
        self.data_dir.join(SET_DIR)
    }

    /// Whether a set is installed (its folder exists).
    #[must_use]
    pub fn has_set(&self) -> bool {
        // gpu-doctor makes the folder itself, never a link: a link there (under `--root`, one
        // pointing out of the fixture) is not a set.
        std::fs::symlink_metadata(self.set_dir()).is_ok_and(|m| m.is_dir())
    }

    /// The installed set's `origin.json`, when it is there and readable.
    #[must_use]
    pub fn origin(&self) -> Option<Origin> {
        let (bytes, _) =
            crate::host::fs::read_regular(&self.set_dir().join(ORIGIN_FILE), 1024 * 1024).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Installs `files` (`(name, bytes)`, already verified) as the new set, atomically.
    ///
    /// # Errors
    /// When a folder or file cannot be created or written, or the swap fails; the previous set
    /// is then still in place.
    pub fn install(&self, files: &[(&str, &[u8])], origin: &Origin) -> Result<PathBuf, StoreError> {
        let error = |action, path: &Path| {
            let path = path.to_path_buf();
            move |source| StoreError {
                action,
                path,
                source,
            }
        };
        std::fs::create_dir_all(&self.data_dir)
            .map_err(error("create the folder", &self.data_dir))?;
        self.remove_leftovers();
        let temp = temp_dir(&self.data_dir)?;
        for (name, bytes) in files {
            write_synced(&temp.path().join(name), bytes)?;
        }
        let origin_json = serde_json::to_vec_pretty(origin).unwrap_or_default();
        write_synced(&temp.path().join(ORIGIN_FILE), &origin_json)?;
        sync_dir(temp.path())?;

        let target = self.set_dir();
        swap_into_place(temp.path(), &target, exchange)?;
        // After an exchange the temporary folder holds the old set; otherwise it is gone.
        drop(temp);
        sync_dir(&self.data_dir)?;
        Ok(target)
    }

    /// Removes temporary folders that interrupted updates left behind. Young ones may belong
    /// to an update running right now, so they stay. Best effort: a leftover costs only space.
    fn remove_leftovers(&self) {
        let Ok(entries) = std::fs::read_dir(&self.data_dir) else {
            return;
        };
        let now = SystemTime::now();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let old = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| now.duration_since(t).ok())
                .is_some_and(|age| age > STALE_TEMP);
            if name.to_string_lossy().starts_with(TEMP_PREFIX) && old {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// A temporary folder next to the set (`.manifests.tmp-XXXXXX`), removed when dropped. Made
/// with the mode a plain `mkdir` gives (0777 less the umask), because after the swap it *is*
/// the installed set, readable by whoever could read the old one.
fn temp_dir(parent: &Path) -> Result<tempfile::TempDir, StoreError> {
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(std::fs::Permissions::from_mode(0o777))
        .tempdir_in(parent)
        .map_err(|source| StoreError {
            action: "create a temporary folder in",
            path: parent.to_path_buf(),
            source,
        })
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let error = |source| StoreError {
        action: "write",
        path: path.to_path_buf(),
        source,
    };
    let mut file = std::fs::File::create_new(path).map_err(error)?;
    file.write_all(bytes).map_err(error)?;
    file.sync_all().map_err(error)
}

/// Makes a folder's entries durable: without it, a power cut after the rename can lose it.
fn sync_dir(path: &Path) -> Result<(), StoreError> {
    std::fs::File::open(path)
        .and_then(|dir| dir.sync_all())
        .map_err(|source| StoreError {
            action: "sync the folder",
            path: path.to_path_buf(),
            source,
        })
}

/// Puts the folder `new` at `target`. Afterwards `new` holds the previous set (exchange) or
/// does not exist. `exchange` is [`exchange`], a parameter so tests can take it away.
fn swap_into_place(
    new: &Path,
    target: &Path,
    exchange: fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), StoreError> {
    let error = |action, path: &Path| {
        let path = path.to_path_buf();
        move |source| StoreError {
            action,
            path,
            source,
        }
    };
    if !target.exists() {
        return std::fs::rename(new, target).map_err(error("move the new set to", target));
    }
    match exchange(new, target) {
        Ok(()) => return Ok(()),
        Err(e) if !exchange_unsupported(&e) => {
            return Err(error("swap the new set into", target)(e));
        }
        Err(_) => {}
    }
    // No atomic exchange here: move the old set aside, move the new one in, and put the old one
    // back if that fails.
    let aside = new.with_extension("old");
    std::fs::rename(target, &aside).map_err(error("move the old set away from", target))?;
    if let Err(e) = std::fs::rename(new, target) {
        let _ = std::fs::rename(&aside, target);
        return Err(error("move the new set to", target)(e));
    }
    let _ = std::fs::remove_dir_all(&aside);
    Ok(())
}

/// Whether `exchange` failed because the system or file system lacks it (not a real error).
fn exchange_unsupported(error: &std::io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        use rustix::io::Errno;
        matches!(
            Errno::from_io_error(error),
            Some(Errno::NOSYS | Errno::INVAL | Errno::NOTSUP | Errno::XDEV)
        )
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = error;
        true
    }
}

/// Atomically exchanges two paths (Linux 3.15+, most local file systems). Relative paths are
/// relative to the working folder, as with `std::fs::rename`.
#[cfg(target_os = "linux")]
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(std::io::Error::from)
}

#[cfg(not(target_os = "linux"))]
fn exchange(_a: &Path, _b: &Path) -> std::io::Result<()> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin {
        Origin {
            source: "https://m.example/".into(),
            installed: "2026-11-29".into(),
            key: "00".into(),
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn install_replaces_the_whole_set_and_leaves_no_temporary_folder() {
        let data = tempfile::tempdir().expect("tempdir");
        let store = Store::new(data.path().join("gpu-doctor"));
        assert!(!store.has_set());
        store
            .install(&[("a.toml", b"one"), ("old-only.toml", b"x")], &origin())
            .expect("first install");
        assert_eq!(
            names(&store.set_dir()),
            ["a.toml", "old-only.toml", "origin.json"]
        );
        store
            .install(&[("a.toml", b"two")], &origin())
            .expect("second install");
        assert_eq!(names(&store.set_dir()), ["a.toml", "origin.json"]);
        assert_eq!(
            std::fs::read(store.set_dir().join("a.toml")).expect("read"),
            b"two"
        );
        assert_eq!(names(&data.path().join("gpu-doctor")), ["manifests"]);
        assert_eq!(store.origin(), Some(origin()));
    }

    #[test]
    fn a_failed_install_leaves_the_previous_set() {
        let data = tempfile::tempdir().expect("tempdir");
        let store = Store::new(data.path().join("gpu-doctor"));
        store
            .install(&[("a.toml", b"one")], &origin())
            .expect("first install");
        // A name that cannot be a file inside the temporary folder makes the write fail.
        let error = store
            .install(&[("a.toml", b"two"), ("no/such/dir", b"x")], &origin())
            .expect_err("fails");
        assert_eq!(error.action, "write");
        assert_eq!(
            std::fs::read(store.set_dir().join("a.toml")).expect("read"),
            b"one"
        );
        assert_eq!(names(&data.path().join("gpu-doctor")), ["manifests"]);
    }

    #[test]
    fn the_fallback_swap_works_without_exchange() {
        let data = tempfile::tempdir().expect("tempdir");
        let target = data.path().join("manifests");
        let new = data.path().join("new");
        std::fs::create_dir(&target).expect("mkdir");
        std::fs::write(target.join("f"), b"old").expect("write");
        std::fs::create_dir(&new).expect("mkdir");
        std::fs::write(new.join("f"), b"new").expect("write");
        let unsupported = |_: &Path, _: &Path| Err(std::io::Error::from(rustix::io::Errno::NOSYS));
        swap_into_place(&new, &target, unsupported).expect("swapped");
        assert_eq!(std::fs::read(target.join("f")).expect("read"), b"new");
        assert_eq!(names(data.path()), ["manifests"]);
    }

    #[test]
    fn the_exchange_swaps_and_keeps_the_old_set_in_the_temporary_folder() {
        let data = tempfile::tempdir().expect("tempdir");
        let target = data.path().join("manifests");
        let new = data.path().join("new");
        std::fs::create_dir(&target).expect("mkdir");
        std::fs::write(target.join("f"), b"old").expect("write");
        std::fs::create_dir(&new).expect("mkdir");
        std::fs::write(new.join("f"), b"new").expect("write");
        swap_into_place(&new, &target, exchange).expect("swapped");
        assert_eq!(std::fs::read(target.join("f")).expect("read"), b"new");
        assert_eq!(std::fs::read(new.join("f")).expect("read"), b"old");
    }

    #[test]
    fn old_leftovers_are_removed_young_ones_kept() {
        let data = tempfile::tempdir().expect("tempdir");
        let store = Store::new(data.path().to_path_buf());
        let young = data.path().join(format!("{TEMP_PREFIX}1-1"));
        std::fs::create_dir(&young).expect("mkdir");
        let old = data.path().join(format!("{TEMP_PREFIX}2-2"));
        std::fs::create_dir(&old).expect("mkdir");
        let past = SystemTime::now() - Duration::from_secs(7200);
        std::fs::File::open(&old)
            .and_then(|f| f.set_modified(past))
            .expect("set mtime");
        store.remove_leftovers();
        assert!(young.exists());
        assert!(!old.exists());
    }
}

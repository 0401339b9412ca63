//! Which manifest set is in use: the installed one when it is intact and not older than the
//! built-in one, else the built-in one. Every `doctor` run calls [`select`], so nothing here
//! touches the network or prints.
//!
//! Depends on [`crate::config`] (the data folder), [`super::store`], [`super::set`] and
//! [`super::read`] (checking an installed set against its own index).

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use super::error::UpdateError;
use super::fetch::{DirSource, Source};
use super::index::{self, INDEX_FILE, INDEX_LIMIT};
use super::read::read_files;
use super::render::Progress;
use super::set::{self, CheckedSet, SetIdentity};
use super::store::Store;
use crate::config::Dirs;
use crate::host::Host;
use crate::manifest::{InUse, Manifests, SetInUse};

/// Where the set in use came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Built into the binary.
    Embedded,
    /// Downloaded by `manifest update`.
    Installed,
}

impl Origin {
    /// The report's and `--json`'s word for it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Embedded => "embedded",
            Origin::Installed => "installed",
        }
    }
}

/// What was found in the data folder.
#[derive(Debug, Clone)]
pub enum InstalledState {
    /// No data folder, or no set in it.
    None,
    /// A good set, in use.
    InUse,
    /// A good set older than the built-in one (gpu-doctor was upgraded since), not used.
    Older(SetIdentity),
    /// A set that fails its own index, not used; the message says why.
    Damaged(String),
}

/// The manifest set to diagnose with, and how it was chosen.
#[derive(Debug, Clone)]
pub struct Selected {
    pub manifests: Cow<'static, Manifests>,
    pub origin: Origin,
    pub identity: SetIdentity,
    /// The installed set's folder (whether or not it is used).
    pub installed_dir: Option<PathBuf>,
    pub installed: InstalledState,
}

impl Selected {
    /// The warning a user must see: an installed set that cannot be used.
    #[must_use]
    pub fn warning(&self) -> Option<String> {
        match &self.installed {
            InstalledState::Damaged(reason) => Some(format!(
                "the installed manifest set ({}) is damaged: {reason}; using the built-in set \
                 {} instead. Run `gpu-doctor manifest update` to replace it",
                self.installed_dir
                    .as_deref()
                    .map_or_else(String::new, |p| p.display().to_string()),
                set::embedded_identity().version,
            )),
            _ => None,
        }
    }

    /// The set for the faces: its tables and what the report says of it.
    #[must_use]
    pub fn into_in_use(self) -> InUse {
        let warning = self.warning();
        InUse {
            manifests: self.manifests,
            origin: self.origin.as_str(),
            version: self.identity.version,
            updated: self.identity.date.to_string(),
            warning,
        }
    }
}

/// The set `host`'s data folder selects ([`select`]), chosen on first use: what the settings
/// pass hands every face.
#[must_use]
pub fn set_in_use(host: Host) -> SetInUse {
    SetInUse::new(move || select(&host).into_in_use())
}

/// The set `doctor` uses: the installed one when it is intact and not older than the built-in
/// one, else the built-in one. Never fails: a damaged installed set is reported in
/// [`Selected::installed`] and [`Selected::warning`], and the built-in set is used.
#[must_use]
#[expect(
    clippy::disallowed_methods,
    reason = "the choosing itself: the built-in set is what the settings pass's choice falls back to"
)]
pub fn select(host: &Host) -> Selected {
    let embedded = || Selected {
        manifests: Cow::Borrowed(crate::manifest::embedded()),
        origin: Origin::Embedded,
        identity: set::embedded_identity().clone(),
        installed_dir: None,
        installed: InstalledState::None,
    };
    let Some(data_dir) = Dirs::of(host).data_dir else {
        return embedded();
    };
    let store = Store::new(data_dir);
    let dir = store.set_dir();
    if !store.has_set() {
        return Selected {
            installed_dir: Some(dir),
            ..embedded()
        };
    }
    // One retry: an update swapping the folder while it is read makes one read inconsistent,
    // and that is not damage.
    let installed = match load_installed(&dir).or_else(|_| load_installed(&dir)) {
        Ok(checked) if checked.identity.date >= set::embedded_identity().date => {
            return Selected {
                manifests: Cow::Owned(checked.manifests),
                origin: Origin::Installed,
                identity: checked.identity,
                installed_dir: Some(dir),
                installed: InstalledState::InUse,
            };
        }
        Ok(older) => InstalledState::Older(older.identity),
        Err(e) => InstalledState::Damaged(e.to_string()),
    };
    Selected {
        installed_dir: Some(dir),
        installed,
        ..embedded()
    }
}

/// Reads an installed set and checks it against its own index (sizes, sha256, load,
/// validate). The signature is not checked here: it guarded the download, and anyone who can
/// rewrite this folder can rewrite the config's `manifest_pubkey` too; `manifest verify` checks
/// it again on request.
pub(super) fn load_installed(dir: &Path) -> Result<CheckedSet, UpdateError> {
    let mut source = DirSource {
        dir: dir.to_path_buf(),
    };
    let bytes = source
        .get(INDEX_FILE, INDEX_LIMIT)?
        .ok_or_else(|| UpdateError::MissingFile {
            file: INDEX_FILE.to_string(),
            location: dir.display().to_string(),
        })?;
    let index = index::parse(&bytes, &source.locate(INDEX_FILE))?;
    let (_, checked) = read_files(&mut source, &index, &Progress::off())?;
    Ok(checked)
}

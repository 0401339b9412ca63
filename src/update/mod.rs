//! `gpu-doctor manifest show|update|verify`: which compatibility data is in use, and signed
//! updates of it.
//!
//! The manifests built into the binary are the offline default. `manifest update` downloads a
//! newer set and installs it into the user's data folder, but only after every check passes:
//! the index's ed25519 signature by a trusted key (before the index is even parsed), each
//! file's size and sha256 against the index, the set loading and validating as the built-in
//! one does, and its dates not going back (no rollback). Anything less leaves the set in use
//! untouched. `doctor` then uses the installed set ([`select()`]), falling back to the built-in
//! one, with a warning, when the installed set is damaged.
//!
//! Layout (private modules in plain type): `select` (the set every `doctor` uses), `install`
//! (`manifest update`'s settings and sequence), `read` (checking a set from a source), `render`
//! (text and JSON output), [`fetch`] (the only network code), [`index`] + [`keys`]
//! (signature), [`set`] (bytes → checked tables), [`store`] (atomic install), [`crate::config`]
//! (the config file and XDG folders), [`publish`] (the publisher's side), [`date`], [`error`].
//! The subcommands' bodies are `crate::commands::manifest`.
//!
//! Depends on [`crate::host`] for the environment and root, [`crate::manifest`], and the
//! network through [`fetch`].

pub use crate::date;
pub mod error;
pub mod fetch;
#[cfg(feature = "network")]
pub mod http;
pub mod index;
pub(crate) mod install;
pub mod keys;
pub mod publish;
pub(crate) mod read;
pub(crate) mod render;
mod select;
pub mod set;
pub mod store;

pub use install::UpdateOptions;
pub use select::{InstalledState, Origin, Selected, select, set_in_use};

/// Where `manifest update` downloads from when neither `--url` nor `manifest_url` says.
///
/// **A placeholder: the project publishes no manifest set yet.** The `.invalid` top-level
/// domain is reserved never to resolve (RFC 2606), so the default can never reach a stranger's
/// server; `manifest update` without a location says so instead of trying. Replace it with the
/// real folder URL (served over https, holding `index.json`) once one exists.
pub const DEFAULT_MANIFEST_URL: &str = "https://manifests.gpu-doctor.invalid/v1/";

#[cfg(test)]
mod tests;

//! `gpu-doctor manifest show|update|verify`: the compatibility data in use, and signed updates.

use crate::host::Host;

/// `gpu-doctor manifest` actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ManifestCommand {
    /// The manifest set in use, its version, date, and each file's source and rows.
    Show,
    /// Download a newer signed set.
    Update,
    /// Check the installed set against its index.
    Verify,
}

/// Runs a manifest action and returns the exit code.
#[must_use]
pub fn run(_host: &Host, _command: &ManifestCommand) -> u8 {
    eprintln!("gpu-doctor: manifest updates are not built yet");
    crate::app::exit::FAILED
}

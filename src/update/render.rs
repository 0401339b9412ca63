//! Text and JSON output of the `manifest` subcommands: `manifest show`'s table, the short
//! descriptions of a set, progress lines on stderr, and writing to stdout.
//!
//! Depends on [`mod@super::select`] (what it describes) and [`super::set`]; writes nothing itself
//! and decides no exit code.

use std::io::IsTerminal;

use serde_json::{Value, json};

use super::select::{InstalledState, Origin, Selected};
use super::set;
use super::store::Store;
use crate::config::Dirs;
use crate::host::Host;

// ---------------------------------------------------------------------------------------------
// manifest show

/// One line of `manifest show`.
pub(crate) struct FileRow {
    pub(crate) name: &'static str,
    pub(crate) updated: String,
    pub(crate) rows: usize,
    pub(crate) tables: Vec<(String, usize)>,
    pub(crate) size: u64,
    pub(crate) sha256: String,
    /// Where the file is read from.
    pub(crate) source: String,
}

pub(crate) fn file_rows(selected: &Selected) -> Vec<FileRow> {
    selected
        .identity
        .files
        .iter()
        .map(|f| {
            let (text, source) = match (selected.origin, &selected.installed_dir) {
                (Origin::Installed, Some(dir)) => {
                    let path = dir.join(f.name);
                    (
                        crate::host::fs::read_regular(&path, crate::host::fs::DEFAULT_READ_LIMIT)
                            .map(|(b, _)| String::from_utf8_lossy(&b).into_owned())
                            .unwrap_or_default(),
                        path.display().to_string(),
                    )
                }
                _ => (
                    set::embedded_text(f.name).unwrap_or_default().to_string(),
                    "built into gpu-doctor".to_string(),
                ),
            };
            let tables = set::rows(&text);
            FileRow {
                name: f.name,
                updated: f.updated.clone(),
                rows: tables.iter().map(|(_, n)| n).sum(),
                tables,
                size: f.size,
                sha256: f.sha256.clone(),
                source,
            }
        })
        .collect()
}

/// What `manifest show` suggests for a newer set. While the project publishes none (its
/// default location is a placeholder and no key is built in), a bare `manifest update` can
/// only fail, so it names what does work: a set someone publishes, with its key.
fn update_advice() -> &'static str {
    if super::DEFAULT_MANIFEST_URL.contains(".invalid") {
        "The project publishes no signed set yet; a set published with \
         scripts/publish-manifests.sh installs with `gpu-doctor manifest update --url LOCATION \
         --pubkey FILE`."
    } else {
        "`gpu-doctor manifest update` fetches a newer one."
    }
}

pub(crate) fn show_text(host: &Host, selected: &Selected, files: &[FileRow]) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "Manifest set in use: {}", describe(selected));
    if selected.origin == Origin::Installed {
        if let Some(dir) = &selected.installed_dir {
            let _ = writeln!(out, "  folder: {}", dir.display());
        }
        if let Some(origin) = Dirs::of(host)
            .data_dir
            .map(Store::new)
            .and_then(|s| s.origin())
        {
            let _ = writeln!(
                out,
                "  downloaded from {} on {}, signed by key {}",
                origin.source,
                origin.installed,
                origin.key.get(..16).unwrap_or(&origin.key)
            );
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<16} {:<10} {:>5}  source",
        "file", "updated", "rows"
    );
    for f in files {
        let _ = writeln!(
            out,
            "{:<16} {:<10} {:>5}  {}",
            f.name, f.updated, f.rows, f.source
        );
    }
    let _ = writeln!(out);
    match &selected.installed {
        InstalledState::None => {
            let _ = writeln!(
                out,
                "No downloaded set is installed{}. {}",
                selected
                    .installed_dir
                    .as_deref()
                    .map_or_else(String::new, |d| format!(" ({})", d.display())),
                update_advice()
            );
        }
        InstalledState::InUse => {
            let _ = writeln!(
                out,
                "Built-in set: {} (dated {})",
                set::embedded_identity().version,
                set::embedded_identity().date
            );
        }
        InstalledState::Older(id) => {
            let _ = writeln!(
                out,
                "The installed set {} is older than the built-in one, so the built-in one is used.",
                id.version
            );
        }
        InstalledState::Damaged(_) => {
            if let Some(warning) = selected.warning() {
                let _ = writeln!(out, "warning: {warning}");
            }
        }
    }
    out
}

/// "the built-in set 2026-11-29+… (dated 2026-11-29)".
pub(crate) fn describe(selected: &Selected) -> String {
    format!(
        "the {} set {} (dated {})",
        match selected.origin {
            Origin::Embedded => "built-in",
            Origin::Installed => "installed",
        },
        selected.identity.version,
        selected.identity.date
    )
}

pub(crate) fn set_json(selected: &Selected) -> Value {
    json!({
        "origin": selected.origin.as_str(),
        "version": selected.identity.version,
        "date": selected.identity.date.to_string(),
    })
}

// ---------------------------------------------------------------------------------------------
// Output

/// Progress lines on stderr, only when a person is watching it and JSON was not asked for.
pub(crate) struct Progress {
    on: bool,
}

impl Progress {
    pub(crate) fn new(wanted: bool) -> Progress {
        Progress {
            on: wanted && std::io::stderr().is_terminal() && crate::term::level() >= 0,
        }
    }

    pub(crate) fn off() -> Progress {
        Progress { on: false }
    }

    pub(crate) fn say(&self, line: &str) {
        if self.on {
            crate::term::raw(&format!("{line}\n"));
        }
    }
}

pub(crate) fn size_text(bytes: u64) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        #[expect(
            clippy::cast_precision_loss,
            reason = "a file size shown to one decimal"
        )]
        let kib = bytes as f64 / 1024.0;
        format!("{kib:.1} KiB")
    }
}

#[cfg(test)]
mod advice_tests {
    /// With no published set, `manifest show` must not send users to a bare `manifest update`,
    /// which fails for want of a location and a key.
    #[test]
    fn show_names_what_an_update_needs_while_nothing_is_published() {
        let advice = super::update_advice();
        assert!(super::super::DEFAULT_MANIFEST_URL.contains(".invalid"));
        assert!(advice.contains("--url LOCATION"), "{advice}");
        assert!(advice.contains("--pubkey FILE"), "{advice}");
    }
}

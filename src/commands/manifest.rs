//! `gpu-doctor manifest show|update|verify` (and the hidden `publish` and `keygen`): each calls
//! [`crate::update`], prints through its renderers, and returns the status. Exit 0 done; 1 the
//! update or verification failed (the set in use is unchanged); 2 usage error (URL, key file,
//! config file).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::settings::Settings;
use crate::cli::manifest::{ManifestCommand, UpdateArgs};
use crate::config::Dirs;
use crate::exit::{CliError, CliResult, ExitStatus};
use crate::host::Host;
use crate::update::error::UpdateError;
use crate::update::fetch::DirSource;
use crate::update::install::{UpdateOptions, Updated, plan, trusted_keys, update};
use crate::update::read::{read_files, read_signed_index};
use crate::update::render::{Progress, describe, file_rows, set_json, show_text};
use crate::update::store::Store;
use crate::update::{InstalledState, Origin, index, publish, select, set};

/// Runs a manifest action.
pub(super) fn run(settings: &Settings, command: &ManifestCommand) -> CliResult {
    match command {
        ManifestCommand::Show { json } => show(&settings.host, *json),
        ManifestCommand::Update(args) => update_command(settings, args),
        ManifestCommand::Verify { pubkey, json } => verify_command(settings, pubkey, *json),
        ManifestCommand::Publish { out, from, key } => publish_command(from, out, key.as_deref()),
        ManifestCommand::Keygen { secret } => keygen_command(secret),
    }
}

fn emit(text: &str) -> CliResult {
    crate::output::emit(text)?;
    Ok(ExitStatus::Success)
}

fn emit_json(value: &Value) -> CliResult {
    crate::output::emit_json(value)?;
    Ok(ExitStatus::Success)
}

/// The status of a failed update or verification: 2 when the user can fix the command line or
/// a setting, else 1.
fn failed_status(error: &UpdateError) -> ExitStatus {
    if error.is_usage() {
        ExitStatus::Usage
    } else {
        ExitStatus::Problem
    }
}

// ---------------------------------------------------------------------------------------------
// manifest update

fn update_command(settings: &Settings, args: &UpdateArgs) -> CliResult {
    let host = &settings.host;
    let progress = Progress::new(!args.json);
    let in_use = select(host);
    let options = UpdateOptions {
        url: args.url.clone(),
        offline: args.offline,
        pubkey: args.pubkey.clone(),
        connect_timeout: args.connect_timeout,
        max_time: args.max_time,
    };
    let result = plan(host, &options, &settings.config).and_then(|plan| {
        update(&plan, &in_use, &progress).map(|outcome| (plan.location.display(), outcome))
    });
    match result {
        Ok((source, (updated, identity))) => {
            let (status, text) = match &updated {
                Updated::Installed { path } => (
                    "installed",
                    format!(
                        "Installed manifest set {} (dated {}) from {source}\ninto {}\n",
                        identity.version,
                        identity.date,
                        path.display()
                    ),
                ),
                Updated::UpToDate => (
                    "up_to_date",
                    format!(
                        "Already up to date: the published set {} is the {} set in use.\n",
                        identity.version,
                        match in_use.origin {
                            Origin::Embedded => "built-in",
                            Origin::Installed => "installed",
                        }
                    ),
                ),
            };
            if args.json {
                let path = match &updated {
                    Updated::Installed { path } => Some(path.display().to_string()),
                    Updated::UpToDate => None,
                };
                emit_json(&json!({
                    "status": status,
                    "version": identity.version,
                    "date": identity.date.to_string(),
                    "source": source,
                    "path": path,
                    "previous": set_json(&in_use),
                }))
            } else {
                emit(&text)
            }
        }
        Err(error) => {
            let status = failed_status(&error);
            if args.json {
                emit_json(&json!({
                    "status": "failed",
                    "error": { "kind": error.kind(), "message": error.to_string() },
                    "in_use": set_json(&in_use),
                }))?;
                return Err(CliError::silent(status));
            }
            let failed = CliError::new(status, format!("manifest update failed: {error}"));
            Err(if error.is_usage() {
                failed
            } else {
                failed.and(format!(
                    "nothing was changed; the set in use is still {}",
                    describe(&in_use)
                ))
            })
        }
    }
}

// ---------------------------------------------------------------------------------------------
// manifest verify

fn verify_command(settings: &Settings, pubkey: &[PathBuf], json_out: bool) -> CliResult {
    let host = &settings.host;
    let dirs = Dirs::of(host);
    let trusted = trusted_keys(pubkey, &settings.config);
    let trusted = match trusted {
        Ok(key) => key,
        Err(error) => return fail(json_out, "verify", &error, None),
    };
    let Some(data_dir) = dirs.data_dir else {
        return fail(json_out, "verify", &UpdateError::NoDataDir, None);
    };
    let store = Store::new(data_dir);
    let dir = store.set_dir();
    if !store.has_set() {
        let text = format!(
            "No downloaded manifest set is installed ({}); gpu-doctor uses its built-in set {}.\n",
            dir.display(),
            set::embedded_identity().version
        );
        return if json_out {
            emit_json(&json!({ "status": "none", "path": dir.display().to_string() }))
        } else {
            emit(&text)
        };
    }
    let mut source = DirSource { dir: dir.clone() };
    let result =
        read_signed_index(&mut source, &trusted, &Progress::off()).and_then(|(index, _, sig)| {
            read_files(&mut source, &index, &Progress::off()).map(|r| (r, index::signer(&sig)))
        });
    match result {
        Ok(((_, checked), signer)) => {
            let signer = signer.map_or_else(String::new, |k| k.to_hex());
            if json_out {
                emit_json(&json!({
                    "status": "ok",
                    "path": dir.display().to_string(),
                    "version": checked.identity.version,
                    "date": checked.identity.date.to_string(),
                    "key": signer,
                }))
            } else {
                emit(&format!(
                    "The installed manifest set {} ({}) verifies: signed by the trusted key {}, \
                     every file matches its size and sha256, and the set loads and validates.\n",
                    checked.identity.version,
                    dir.display(),
                    signer.get(..16).unwrap_or(&signer)
                ))
            }
        }
        Err(error) => fail(json_out, "verify", &error, Some(&dir)),
    }
}

/// A failed `verify` (or an early failure), said as JSON on stdout or as errors.
fn fail(json_out: bool, action: &str, error: &UpdateError, dir: Option<&Path>) -> CliResult {
    let status = failed_status(error);
    if json_out {
        emit_json(&json!({
            "status": "failed",
            "path": dir.map(|d| d.display().to_string()),
            "error": { "kind": error.kind(), "message": error.to_string() },
        }))?;
        return Err(CliError::silent(status));
    }
    Err(match dir {
        Some(dir) => CliError::new(
            status,
            format!(
                "the installed manifest set at {} does not {action}: {error}",
                dir.display()
            ),
        )
        .and(
            "until it is replaced, gpu-doctor uses its built-in set; run \
             `gpu-doctor manifest update` (or delete that folder)",
        ),
        None => CliError::new(status, format!("manifest {action}: {error}")),
    })
}

// ---------------------------------------------------------------------------------------------
// manifest show

fn show(host: &Host, json_out: bool) -> CliResult {
    let selected = select(host);
    let files = file_rows(&selected);
    if json_out {
        let installed = match &selected.installed {
            InstalledState::None => Value::Null,
            InstalledState::InUse => json!({ "status": "in_use" }),
            InstalledState::Older(id) => json!({
                "status": "older_than_built_in", "version": id.version, "date": id.date.to_string(),
            }),
            InstalledState::Damaged(reason) => json!({ "status": "damaged", "reason": reason }),
        };
        let origin = Dirs::of(host)
            .data_dir
            .map(Store::new)
            .and_then(|s| s.origin())
            .filter(|_| selected.origin == Origin::Installed);
        return emit_json(&json!({
            "in_use": set_json(&selected),
            "path": selected.installed_dir.as_deref().map(|p| p.display().to_string()),
            "installed": installed,
            "downloaded_from": origin.map(|o| json!({
                "source": o.source, "installed": o.installed, "key": o.key,
            })),
            "built_in": {
                "version": set::embedded_identity().version,
                "date": set::embedded_identity().date.to_string(),
            },
            "warning": selected.warning(),
            "files": files.iter().map(|f| json!({
                "name": f.name,
                "updated": f.updated,
                "rows": f.rows,
                "tables": f.tables.iter().map(|(t, n)| (t.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
                "size": f.size,
                "sha256": f.sha256,
                "source": f.source,
            })).collect::<Vec<_>>(),
        }));
    }
    emit(&show_text(host, &selected, &files))
}

// ---------------------------------------------------------------------------------------------
// manifest publish / keygen (hidden)

fn publish_command(from: &Path, out: &Path, key: Option<&Path>) -> CliResult {
    match publish::publish(from, out, key) {
        Ok(published) => {
            let mut text = format!(
                "Wrote manifest set {} (dated {}) to {}, signed by key {}\n",
                published.identity.version,
                published.identity.date,
                out.display(),
                published.signer.id()
            );
            if let Some(path) = &published.public_key_file {
                use std::fmt::Write as _;
                let _ = writeln!(
                    text,
                    "Throw-away key: its public key is {}; clients trust it with --pubkey or \
                     manifest_pubkey. The secret half was not kept.",
                    path.display()
                );
            }
            emit(&text)
        }
        Err(error) => Err(CliError::problem(format!("manifest publish: {error}"))),
    }
}

fn keygen_command(secret: &Path) -> CliResult {
    match publish::keygen(secret) {
        Ok((public, public_file)) => emit(&format!(
            "Secret key: {} (keep it out of any repository)\nPublic key: {} ({})\n",
            secret.display(),
            public_file.display(),
            public.to_hex()
        )),
        Err(error) => Err(CliError::problem(format!("manifest keygen: {error}"))),
    }
}

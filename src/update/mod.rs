//! `gpu-doctor manifest show|update|verify`: which compatibility data is in use, and signed
//! updates of it.
//!
//! The manifests built into the binary are the offline default. `manifest update` downloads a
//! newer set and installs it into the user's data folder, but only after every check passes:
//! the index's ed25519 signature by a trusted key (before the index is even parsed), each
//! file's size and sha256 against the index, the set loading and validating as the built-in
//! one does, and its dates not going back (no rollback). Anything less leaves the set in use
//! untouched. `doctor` then uses the installed set ([`select`]), falling back to the built-in
//! one, with a warning, when the installed set is damaged.
//!
//! Layout: [`fetch`] (the only network code), [`index`] + [`keys`] (signature), [`set`]
//! (bytes → checked tables), [`store`] (atomic install), [`crate::config`] (the config file and XDG
//! folders), [`publish`] (the publisher's side), [`date`], [`error`].
//!
//! Depends on [`crate::host`] for the environment and root, [`crate::manifest`], and the
//! network through [`fetch`].

pub mod date;
pub mod error;
pub mod fetch;
#[cfg(feature = "network")]
pub mod http;
pub mod index;
pub mod keys;
pub mod publish;
pub mod set;
pub mod store;

use std::borrow::Cow;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::app::exit;
use crate::config::{Config, Dirs};
use crate::host::Host;
use crate::manifest::{FILE_NAMES, Manifests};
use date::Date;
use error::UpdateError;
use fetch::{DirSource, HttpOptions, Location, LocationError, Source};
use index::{INDEX_FILE, INDEX_LIMIT, Index, SIGNATURE_FILE, SIGNATURE_LIMIT};
use keys::PublicKey;
use set::{CheckedSet, SetIdentity};
use store::Store;

/// Where `manifest update` downloads from when neither `--url` nor `manifest_url` says.
///
/// **A placeholder: the project publishes no manifest set yet.** The `.invalid` top-level
/// domain is reserved never to resolve (RFC 2606), so the default can never reach a stranger's
/// server; `manifest update` without a location says so instead of trying. Replace it with the
/// real folder URL (served over https, holding `index.json`) once one exists.
pub const DEFAULT_MANIFEST_URL: &str = "https://manifests.gpu-doctor.invalid/v1/";

/// `gpu-doctor manifest` actions.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum ManifestCommand {
    /// The manifest set in use (built in or downloaded): its version, date, and each file's
    /// source and row count.
    Show {
        /// Print JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Download a newer signed manifest set and install it for this user.
    #[command(
        after_help = "Exit codes: 0 installed, or already up to date; 1 the download was \
refused or failed (the set in use is unchanged); 2 usage error (URL, key file, config file)."
    )]
    Update(UpdateArgs),
    /// Check the installed set against its signed index: signature, sizes, sha256, and that
    /// it loads and validates. Exit 1 when it does not.
    Verify {
        /// Trust the public keys in FILE (one a line); repeat to trust several files, e.g. the
        /// old and the new key during a rotation. Required: no key is built in
        /// [env: GPU_DOCTOR_MANIFEST_PUBKEY] [config: manifest_pubkey].
        #[arg(long, value_name = "FILE")]
        pubkey: Vec<PathBuf>,
        /// Print the outcome as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Write the manifest files with a signed index into OUTDIR (scripts/publish-manifests.sh).
    #[command(hide = true)]
    Publish {
        /// The folder to write (created if missing).
        #[arg(value_name = "OUTDIR")]
        out: PathBuf,
        /// The folder holding the manifest files.
        #[arg(long, value_name = "DIR", default_value = "manifests")]
        from: PathBuf,
        /// The secret key file (ed25519 seed, hex or base64); without it, a throw-away key
        /// signs and its public key is left in OUTDIR.
        #[arg(long, value_name = "FILE")]
        key: Option<PathBuf>,
    },
    /// Make a signing key pair: `SECRET_FILE` (mode 0600) and its `.pub` next to it.
    #[command(hide = true)]
    Keygen {
        #[arg(value_name = "SECRET_FILE")]
        secret: PathBuf,
    },
}

/// `manifest update` options.
#[derive(Debug, Clone, clap::Args)]
pub struct UpdateArgs {
    /// Where to download from: the https URL of the folder holding index.json, or a local
    /// folder [env: GPU_DOCTOR_MANIFEST_URL] [config: manifest_url] [default: the project's
    /// location].
    #[arg(long, value_name = "URL")]
    pub url: Option<String>,
    /// Never use the network: install from a local folder given with --url.
    #[arg(long)]
    pub offline: bool,
    /// Trust the public keys in FILE (one a line): the publisher's key file. Repeat to trust
    /// several files, e.g. the old and the new key during a rotation. Required until the
    /// project publishes sets: no key is built in [env: GPU_DOCTOR_MANIFEST_PUBKEY]
    /// [config: manifest_pubkey].
    #[arg(long, value_name = "FILE")]
    pub pubkey: Vec<PathBuf>,
    /// Seconds allowed to connect to the server.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub connect_timeout: f64,
    /// Seconds allowed for the whole download.
    #[arg(long, value_name = "SECS", default_value_t = 120.0)]
    pub max_time: f64,
    /// Print the outcome as JSON on stdout, and nothing on stderr.
    #[arg(long)]
    pub json: bool,
}

/// Runs a manifest action and returns the exit code.
#[must_use]
pub fn run(host: &Host, command: &ManifestCommand) -> u8 {
    match command {
        ManifestCommand::Show { json } => show(host, *json),
        ManifestCommand::Update(args) => update_command(host, args),
        ManifestCommand::Verify { pubkey, json } => verify_command(host, pubkey, *json),
        ManifestCommand::Publish { out, from, key } => publish_command(from, out, key.as_deref()),
        ManifestCommand::Keygen { secret } => keygen_command(secret),
    }
}

// ---------------------------------------------------------------------------------------------
// Which set is in use

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

    /// The report's `manifests` object. `today` is the system clock's date, or `None` where the
    /// report must not depend on the day (`--root`).
    #[must_use]
    pub fn summary(&self, today: Option<Date>) -> crate::report::ManifestSet {
        crate::report::ManifestSet {
            origin: self.origin.as_str().to_string(),
            version: self.identity.version.clone(),
            updated: self.identity.date.to_string(),
            today: today.map(|d| d.to_string()),
            warning: self.warning(),
        }
    }
}

/// The set `doctor` uses: the installed one when it is intact and not older than the built-in
/// one, else the built-in one. Never fails: a damaged installed set is reported in
/// [`Selected::installed`] and [`Selected::warning`], and the built-in set is used.
#[must_use]
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
fn load_installed(dir: &Path) -> Result<CheckedSet, UpdateError> {
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

// ---------------------------------------------------------------------------------------------
// Reading and checking a set from a source

/// Fetches `index.json` and its signature and verifies them with `trusted`. Returns the index
/// and both files' bytes.
fn read_signed_index(
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
type Files = Vec<(&'static str, Vec<u8>)>;

/// Reads every file the index lists, each no larger than its listed size, checks its size and
/// sha256, then loads and validates the set and checks its date against the index.
fn read_files(
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
fn check_set_date(date: Date, in_use: &Selected) -> Result<(), UpdateError> {
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
fn check_file_dates(new: &SetIdentity) -> Result<(), UpdateError> {
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

// ---------------------------------------------------------------------------------------------
// manifest update

/// What an update did.
#[derive(Debug)]
enum Updated {
    Installed { path: PathBuf },
    UpToDate,
}

/// Settings of one update, resolved from the flags, the config file and the defaults.
struct Plan {
    location: Location,
    trusted: Vec<PublicKey>,
    store: Store,
    #[cfg_attr(
        not(feature = "network"),
        expect(dead_code, reason = "only the HTTP source reads it")
    )]
    options: HttpOptions,
}

fn plan(host: &Host, args: &UpdateArgs) -> Result<Plan, UpdateError> {
    let dirs = Dirs::of(host);
    let config = &host.config;
    let connect_timeout = seconds("--connect-timeout", args.connect_timeout)?;
    let max_time = seconds("--max-time", args.max_time)?;
    // The key first: with neither, saying how to trust a key is the more useful message.
    let trusted = trusted_keys(&args.pubkey, config)?;
    let location = location(args.url.as_deref(), config, &dirs, args.offline)?;
    let store = Store::new(dirs.data_dir.ok_or(UpdateError::NoDataDir)?);
    Ok(Plan {
        location,
        trusted,
        store,
        options: HttpOptions {
            connect_timeout,
            max_time,
            proxy_from_env: true,
        },
    })
}

fn seconds(option: &'static str, value: f64) -> Result<Duration, UpdateError> {
    if value.is_finite() && value > 0.0 && value <= 3600.0 {
        Ok(Duration::from_secs_f64(value))
    } else {
        Err(UpdateError::BadDuration { option, value })
    }
}

/// `--url`, else `manifest_url`, else [`DEFAULT_MANIFEST_URL`] (which is refused while it is a
/// placeholder).
fn location(
    url: Option<&str>,
    config: &Config,
    dirs: &Dirs,
    offline: bool,
) -> Result<Location, UpdateError> {
    let text = url
        .or(config.manifest_url.as_deref())
        .unwrap_or(DEFAULT_MANIFEST_URL);
    // An offline build says so before anything else about a URL: no URL could work for it.
    if !cfg!(feature = "network") && !offline && text.contains("://") && !text.starts_with("file:")
    {
        return Err(fetch::FetchError::NoNetwork {
            url: text.to_string(),
        }
        .into());
    }
    if text == DEFAULT_MANIFEST_URL && DEFAULT_MANIFEST_URL.contains(".invalid/") {
        return Err(UpdateError::NoPublishedLocation {
            url: DEFAULT_MANIFEST_URL.to_string(),
            config: dirs.config_file.as_deref().map_or_else(
                || "~/.config/gpu-doctor/config.toml".to_string(),
                |p| p.display().to_string(),
            ),
        });
    }
    let location = Location::parse(text)?;
    if offline && let Location::Http(url) = &location {
        return Err(LocationError::Offline {
            url: url.to_string(),
        }
        .into());
    }
    Ok(location)
}

/// Every key of every `--pubkey` file, else of the `manifest_pubkey` file; there is no
/// built-in key (see [`keys`]), so with neither the update is refused with what to do.
fn trusted_keys(flags: &[PathBuf], config: &Config) -> Result<Vec<PublicKey>, UpdateError> {
    let files: Vec<&Path> = if flags.is_empty() {
        config.manifest_pubkey.as_deref().into_iter().collect()
    } else {
        flags.iter().map(PathBuf::as_path).collect()
    };
    if files.is_empty() {
        return Err(UpdateError::NoTrustedKey);
    }
    let mut trusted: Vec<PublicKey> = Vec::new();
    for file in files {
        for key in keys::read_public_keys(file)? {
            if !trusted.contains(&key) {
                trusted.push(key);
            }
        }
    }
    Ok(trusted)
}

fn update(
    plan: &Plan,
    in_use: &Selected,
    progress: &Progress,
) -> Result<(Updated, SetIdentity), UpdateError> {
    let mut source: Box<dyn Source> = match &plan.location {
        #[cfg(feature = "network")]
        Location::Http(url) => Box::new(http::HttpSource::new(url.clone(), &plan.options)?),
        #[cfg(not(feature = "network"))]
        Location::Http(url) => {
            return Err(fetch::FetchError::NoNetwork {
                url: url.to_string(),
            }
            .into());
        }
        Location::Dir(dir) => Box::new(DirSource { dir: dir.clone() }),
    };
    let (index, index_bytes, sig_bytes) =
        read_signed_index(source.as_mut(), &plan.trusted, progress)?;
    // Up to date, unless a damaged installed set is waiting to be replaced: installing the
    // same set as the built-in one is what clears its warning.
    let damaged = matches!(in_use.installed, InstalledState::Damaged(_));
    if index.version == in_use.identity.version && !damaged {
        return Ok((Updated::UpToDate, in_use.identity.clone()));
    }
    // `index::parse` checked the date, so the fallback is never taken.
    check_set_date(Date::parse(&index.date).unwrap_or(Date::EPOCH), in_use)?;
    let (files, checked) = read_files(source.as_mut(), &index, progress)?;
    check_file_dates(&checked.identity)?;
    let mut all: Vec<(&str, &[u8])> = files.iter().map(|(n, b)| (*n, b.as_slice())).collect();
    all.push((INDEX_FILE, &index_bytes));
    all.push((SIGNATURE_FILE, &sig_bytes));
    let origin = store::Origin {
        source: plan.location.display(),
        installed: Date::from_system_time(SystemTime::now())
            .map_or_else(String::new, |d| d.to_string()),
        key: index::signer(&sig_bytes).map_or_else(String::new, |k| k.to_hex()),
    };
    progress.say("Installing");
    let path = plan.store.install(&all, &origin)?;
    Ok((Updated::Installed { path }, checked.identity))
}

fn update_command(host: &Host, args: &UpdateArgs) -> u8 {
    let progress = Progress::new(!args.json);
    let in_use = select(host);
    let result = plan(host, args).and_then(|plan| {
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
            let code = if error.is_usage() {
                exit::USAGE
            } else {
                exit::PROBLEM
            };
            if args.json {
                let _ = emit_json(&json!({
                    "status": "failed",
                    "error": { "kind": error.kind(), "message": error.to_string() },
                    "in_use": set_json(&in_use),
                }));
            } else {
                crate::term::error(&format!("manifest update failed: {error}"));
                if !error.is_usage() {
                    crate::term::error(&format!(
                        "nothing was changed; the set in use is still {}",
                        describe(&in_use)
                    ));
                }
            }
            code
        }
    }
}

// ---------------------------------------------------------------------------------------------
// manifest verify

fn verify_command(host: &Host, pubkey: &[PathBuf], json_out: bool) -> u8 {
    let dirs = Dirs::of(host);
    let trusted = trusted_keys(pubkey, &host.config);
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

/// Reports a failed `verify` (or an early failure) and returns its exit code.
fn fail(json_out: bool, action: &str, error: &UpdateError, dir: Option<&Path>) -> u8 {
    let code = if error.is_usage() {
        exit::USAGE
    } else {
        exit::PROBLEM
    };
    if json_out {
        let _ = emit_json(&json!({
            "status": "failed",
            "path": dir.map(|d| d.display().to_string()),
            "error": { "kind": error.kind(), "message": error.to_string() },
        }));
    } else if let Some(dir) = dir {
        crate::term::error(&format!(
            "the installed manifest set at {} does not {action}: {error}",
            dir.display()
        ));
        crate::term::error(
            "until it is replaced, gpu-doctor uses its built-in set; run \
             `gpu-doctor manifest update` (or delete that folder)",
        );
    } else {
        crate::term::error(&format!("manifest {action}: {error}"));
    }
    code
}

// ---------------------------------------------------------------------------------------------
// manifest show

fn show(host: &Host, json_out: bool) -> u8 {
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

/// One line of `manifest show`.
struct FileRow {
    name: &'static str,
    updated: String,
    rows: usize,
    tables: Vec<(String, usize)>,
    size: u64,
    sha256: String,
    /// Where the file is read from.
    source: String,
}

fn file_rows(selected: &Selected) -> Vec<FileRow> {
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

fn show_text(host: &Host, selected: &Selected, files: &[FileRow]) -> String {
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
                "No downloaded set is installed{}. `gpu-doctor manifest update` fetches a newer one.",
                selected
                    .installed_dir
                    .as_deref()
                    .map_or_else(String::new, |d| format!(" ({})", d.display()))
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
fn describe(selected: &Selected) -> String {
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

fn set_json(selected: &Selected) -> Value {
    json!({
        "origin": selected.origin.as_str(),
        "version": selected.identity.version,
        "date": selected.identity.date.to_string(),
    })
}

// ---------------------------------------------------------------------------------------------
// manifest publish / keygen (hidden)

fn publish_command(from: &Path, out: &Path, key: Option<&Path>) -> u8 {
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
        Err(error) => {
            crate::term::error(&format!("manifest publish: {error}"));
            exit::PROBLEM
        }
    }
}

fn keygen_command(secret: &Path) -> u8 {
    match publish::keygen(secret) {
        Ok((public, public_file)) => emit(&format!(
            "Secret key: {} (keep it out of any repository)\nPublic key: {} ({})\n",
            secret.display(),
            public_file.display(),
            public.to_hex()
        )),
        Err(error) => {
            crate::term::error(&format!("manifest keygen: {error}"));
            exit::PROBLEM
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Output

/// Progress lines on stderr, only when a person is watching it and JSON was not asked for.
struct Progress {
    on: bool,
}

impl Progress {
    fn new(wanted: bool) -> Progress {
        Progress {
            on: wanted && std::io::stderr().is_terminal() && crate::term::level() >= 0,
        }
    }

    fn off() -> Progress {
        Progress { on: false }
    }

    fn say(&self, line: &str) {
        if self.on {
            eprintln!("{line}");
        }
    }
}

fn size_text(bytes: u64) -> String {
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

fn emit(text: &str) -> u8 {
    crate::app::emit_text(text)
}

fn emit_json(value: &Value) -> u8 {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    emit(&text)
}

#[cfg(test)]
mod tests;

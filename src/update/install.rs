//! `manifest update` itself: its settings resolved from the flags, the config file and the
//! defaults ([`plan`]), and the download-check-install sequence ([`update`]), which changes
//! nothing unless every check passes.
//!
//! Depends on [`super::read`] for the checks, [`super::store`] for the atomic install, and the
//! network only through [`super::fetch`] / [`super::http`].

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::DEFAULT_MANIFEST_URL;
use super::error::UpdateError;
use super::fetch::{self, DirSource, HttpOptions, Location, LocationError, Source};
#[cfg(feature = "network")]
use super::http;
use super::index::{self, INDEX_FILE, SIGNATURE_FILE};
use super::keys::{self, PublicKey};
use super::read::{check_file_dates, check_set_date, read_files, read_signed_index};
use super::render::Progress;
use super::select::{InstalledState, Selected};
use super::set::SetIdentity;
use super::store::{self, Store};
use crate::config::{Config, Dirs};
use crate::date::Date;
use crate::host::Host;

/// What an update did.
#[derive(Debug)]
pub(crate) enum Updated {
    Installed { path: PathBuf },
    UpToDate,
}

/// Settings of one update, resolved from the flags, the config file and the defaults.
pub(crate) struct Plan {
    pub(crate) location: Location,
    pub(super) trusted: Vec<PublicKey>,
    pub(super) store: Store,
    #[cfg_attr(
        not(feature = "network"),
        expect(dead_code, reason = "only the HTTP source reads it")
    )]
    pub(super) options: HttpOptions,
}

/// What `manifest update` was asked to do, as the command line said it (the config file's
/// `manifest_url` and `manifest_pubkey` apply where it said nothing).
#[derive(Debug, Clone, Default)]
pub struct UpdateOptions {
    /// `--url`.
    pub url: Option<String>,
    /// `--offline`.
    pub offline: bool,
    /// `--pubkey` files.
    pub pubkey: Vec<PathBuf>,
    /// `--connect-timeout` seconds.
    pub connect_timeout: f64,
    /// `--max-time` seconds.
    pub max_time: f64,
}

pub(crate) fn plan(
    host: &Host,
    args: &UpdateOptions,
    config: &Config,
) -> Result<Plan, UpdateError> {
    let dirs = Dirs::of(host);
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

pub(super) fn seconds(option: &'static str, value: f64) -> Result<Duration, UpdateError> {
    crate::config::check_seconds(value)
        .map(Duration::from_secs_f64)
        .map_err(|_| UpdateError::BadDuration { option, value })
}

/// `--url`, else `manifest_url`, else [`DEFAULT_MANIFEST_URL`] (which is refused while it is a
/// placeholder).
pub(super) fn location(
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
pub(crate) fn trusted_keys(
    flags: &[PathBuf],
    config: &Config,
) -> Result<Vec<PublicKey>, UpdateError> {
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

pub(crate) fn update(
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

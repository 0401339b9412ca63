//! Where a manifest set is read from: an HTTPS location (or plain HTTP on a loopback address,
//! for tests), or a local folder (`--offline`, the installed set). Every read has a size limit;
//! HTTP reads also have connect and total deadlines and a redirect policy.
//!
//! The HTTP client itself is in [`super::http`], built only with the `network` cargo feature
//! (on by default); without it a URL location is refused with [`FetchError::NoNetwork`].

use std::io::Read;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use url::Url;

/// Redirects followed before giving up: enough for a CDN or a `/latest/` alias, not a loop.
pub const MAX_REDIRECTS: usize = 5;

/// Why a read failed. 404 / a missing file is not an error here: [`Source::get`] returns
/// `Ok(None)` and the caller says what was missing.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error(
        "timed out fetching {url} (the whole update may take {secs} s, --max-time); try again, or raise --max-time on a slow network"
    )]
    Timeout { url: String, secs: u64 },
    #[error("cannot connect to {url}: {reason}")]
    Connect { url: String, reason: String },
    #[error("{url}: the server answered HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url} is larger than {limit} bytes, the most gpu-doctor accepts for it; refusing it")]
    TooLarge { url: String, limit: u64 },
    #[error("{url}: the download stopped after {got} of {expected} bytes (truncated); try again")]
    Truncated {
        url: String,
        got: u64,
        expected: u64,
    },
    #[error("{url}: {reason}")]
    Redirect { url: String, reason: String },
    #[error("{url}: {reason}")]
    Other { url: String, reason: String },
    #[error(
        "{url}: this gpu-doctor was built without network support (cargo feature `network`); pass a folder or file:// location, or use a build with default features"
    )]
    NoNetwork { url: String },
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Where the files of a set come from, by file name (`index.json`, `cuda.toml`).
pub trait Source {
    /// The URL or path of `name`, for messages.
    fn locate(&self, name: &str) -> String;

    /// The bytes of `name`, at most `limit` of them; `Ok(None)` when there is no such file.
    ///
    /// # Errors
    /// When it cannot be read, is larger than `limit`, or arrives incomplete or too late.
    fn get(&mut self, name: &str, limit: u64) -> Result<Option<Vec<u8>>, FetchError>;
}

/// Why a location given by the user cannot be used; a usage error (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    #[error(
        "{url}: plain http is refused (the index is signed, but the download could still be \
         blocked or replayed by anyone on the path); use https. Plain http is only allowed to a \
         loopback address such as 127.0.0.1, for tests"
    )]
    InsecureHttp { url: String },
    #[error(
        "{url}: not a URL gpu-doctor can fetch from ({reason}); give an https:// URL or a local folder"
    )]
    Unsupported { url: String, reason: String },
    #[error(
        "--offline: {url} needs the network; give --url a local folder (for example one written by \
         scripts/publish-manifests.sh)"
    )]
    Offline { url: String },
}

/// A place a set can be read from, as given by `--url`, the config file or the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// An https URL (or http to a loopback address) of the folder holding `index.json`.
    Http(Url),
    /// A local folder holding `index.json`.
    Dir(PathBuf),
}

impl Location {
    /// Parses `--url`: `https://…` (or `http://` to a loopback address), `file://…`, or a local
    /// folder path. A URL naming `…/index.json` stands for its folder.
    ///
    /// # Errors
    /// [`LocationError`] for other schemes, or plain http to a non-loopback host.
    pub fn parse(text: &str) -> Result<Location, LocationError> {
        let unsupported = |reason: &str| LocationError::Unsupported {
            url: text.to_string(),
            reason: reason.to_string(),
        };
        let lower = text.to_ascii_lowercase();
        if !lower.contains("://") {
            let path = Path::new(text);
            let path = if path.ends_with("index.json") {
                path.parent().unwrap_or(path)
            } else {
                path
            };
            return Ok(Location::Dir(path.to_path_buf()));
        }
        let mut url = Url::parse(text).map_err(|e| unsupported(&e.to_string()))?;
        match url.scheme() {
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|()| unsupported("not a local file path"))?;
                Location::parse(&path.display().to_string())
            }
            "https" | "http" => {
                check_url(&url)?;
                if url.path().ends_with("/index.json") {
                    let folder = url.path().trim_end_matches("index.json").to_string();
                    url.set_path(&folder);
                } else if !url.path().ends_with('/') {
                    let folder = format!("{}/", url.path());
                    url.set_path(&folder);
                }
                url.set_query(None);
                url.set_fragment(None);
                Ok(Location::Http(url))
            }
            other => Err(unsupported(&format!(
                "the {other}: scheme is not supported"
            ))),
        }
    }

    /// For messages: the URL or the folder.
    #[must_use]
    pub fn display(&self) -> String {
        match self {
            Location::Http(url) => url.to_string(),
            Location::Dir(path) => path.display().to_string(),
        }
    }
}

/// HTTPS anywhere; plain HTTP only to a loopback IP literal (`127.0.0.0/8`, `::1`). A host
/// *name* such as `localhost` is not trusted to be loopback: resolvers can say otherwise.
///
/// # Errors
/// [`LocationError::InsecureHttp`] or [`LocationError::Unsupported`].
pub fn check_url(url: &Url) -> Result<(), LocationError> {
    match url.scheme() {
        "https" => Ok(()),
        "http" if is_loopback(url) => Ok(()),
        "http" => Err(LocationError::InsecureHttp {
            url: url.to_string(),
        }),
        other => Err(LocationError::Unsupported {
            url: url.to_string(),
            reason: format!("the {other}: scheme is not supported"),
        }),
    }
}

fn is_loopback(url: &Url) -> bool {
    url.host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
        .and_then(|h| h.parse::<IpAddr>().ok())
        .is_some_and(|ip| ip.is_loopback())
}

/// Network settings for one update.
#[derive(Debug, Clone, Copy)]
pub struct HttpOptions {
    /// Limit for establishing each connection (TCP + TLS).
    pub connect_timeout: Duration,
    /// Limit for the whole update: every request and body together.
    pub max_time: Duration,
    /// Honour `HTTPS_PROXY` / `ALL_PROXY` / `NO_PROXY` (the CLI does; in-process tests turn it
    /// off so a developer's proxy settings cannot send a loopback request elsewhere).
    pub proxy_from_env: bool,
}

/// Files in a local folder: `--offline` and the installed set.
pub struct DirSource {
    pub dir: PathBuf,
}

impl Source for DirSource {
    fn locate(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "a set folder (`--url DIR`, or the installed set's, both real paths): a link is refused before the file is read"
    )]
    fn get(&mut self, name: &str, limit: u64) -> Result<Option<Vec<u8>>, FetchError> {
        let path = self.dir.join(name);
        let io = |source| FetchError::Io {
            path: path.clone(),
            source,
        };
        // A set's files are regular files (the store writes them so): a link is refused, so an
        // installed set under `--root` cannot lead a read out of the root.
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a symbolic link, not a file",
            )));
        }
        let file = match crate::host::fs::open_regular(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let mut body = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(io)?;
        if body.len() as u64 > limit {
            return Err(FetchError::TooLarge {
                url: path.display().to_string(),
                limit,
            });
        }
        Ok(Some(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_anywhere_http_only_to_loopback_addresses() {
        let ok = |t: &str| Location::parse(t).map(|l| l.display());
        assert_eq!(
            ok("https://example.org/m"),
            Ok("https://example.org/m/".into())
        );
        assert_eq!(
            ok("https://example.org/m/index.json?x=1"),
            Ok("https://example.org/m/".into())
        );
        assert_eq!(
            ok("http://127.0.0.1:8080/"),
            Ok("http://127.0.0.1:8080/".into())
        );
        assert_eq!(ok("http://127.9.9.9/a"), Ok("http://127.9.9.9/a/".into()));
        assert_eq!(ok("http://[::1]:99/"), Ok("http://[::1]:99/".into()));
        for insecure in [
            "http://example.org/",
            "http://localhost/",
            "http://10.0.0.1/",
            "HTTP://192.168.1.1/",
        ] {
            assert!(
                matches!(
                    Location::parse(insecure),
                    Err(LocationError::InsecureHttp { .. })
                ),
                "{insecure}"
            );
        }
        assert!(matches!(
            Location::parse("ftp://example.org/"),
            Err(LocationError::Unsupported { .. })
        ));
    }

    #[test]
    fn folders_and_file_urls_are_local() {
        assert_eq!(
            Location::parse("/srv/m/index.json"),
            Ok(Location::Dir("/srv/m".into()))
        );
        assert_eq!(
            Location::parse("file:///srv/m/"),
            Ok(Location::Dir("/srv/m/".into()))
        );
        assert_eq!(
            Location::parse("relative/dir"),
            Ok(Location::Dir("relative/dir".into()))
        );
    }

    #[test]
    fn dir_source_limits_and_reports_missing_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a"), b"12345").expect("write");
        let mut source = DirSource {
            dir: dir.path().to_path_buf(),
        };
        assert_eq!(
            source.get("a", 5).ok().flatten().as_deref(),
            Some(&b"12345"[..])
        );
        assert!(matches!(
            source.get("a", 4),
            Err(FetchError::TooLarge { limit: 4, .. })
        ));
        assert!(matches!(source.get("b", 4), Ok(None)));
    }
}

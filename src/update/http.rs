//! The HTTPS client behind [`HttpSource`]: the only code that talks to the network. Built with
//! the `network` cargo feature (on by default); depends on reqwest (blocking, rustls + ring).

use std::io::Read;
use std::time::{Duration, Instant};

use reqwest::Url;
use reqwest::blocking::Client;

use super::fetch::{FetchError, HttpOptions, MAX_REDIRECTS, Source, check_url};

/// The one place an HTTP client is built.
///
/// reqwest is built with `rustls-no-provider`, and its `build()` panics unless a rustls crypto
/// provider is installed for the process first (reference/crates.md §0); installing twice is
/// harmless, so every client goes through here.
///
/// # Errors
/// When the client cannot be built (no usable TLS configuration).
pub fn http_client(options: &HttpOptions) -> Result<Client, reqwest::Error> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = Client::builder()
        .connect_timeout(options.connect_timeout)
        // Deadlines are set per request from the update's remaining time (see `HttpSource`).
        .timeout(None)
        .redirect(redirect_policy())
        .user_agent(concat!("gpu-doctor/", env!("CARGO_PKG_VERSION")));
    if !options.proxy_from_env {
        builder = builder.no_proxy();
    }
    builder.build()
}

/// Follows at most [`MAX_REDIRECTS`] redirects, each to a URL [`check_url`] accepts, so a
/// redirect cannot downgrade an https location to plain http.
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        if attempt.previous().len() >= MAX_REDIRECTS {
            let error = format!("more than {MAX_REDIRECTS} redirects");
            return attempt.error(error);
        }
        match check_url(attempt.url()) {
            Ok(()) => attempt.follow(),
            Err(e) => {
                let error = format!("redirect refused: {e}");
                attempt.error(error)
            }
        }
    })
}

/// Files under an HTTP(S) folder URL, within one deadline for the whole update.
pub struct HttpSource {
    client: Client,
    base: Url,
    deadline: Instant,
    max_time: Duration,
}

impl HttpSource {
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(base: Url, options: &HttpOptions) -> Result<HttpSource, FetchError> {
        let client = http_client(options).map_err(|e| FetchError::Other {
            url: base.to_string(),
            reason: format!("cannot set up HTTPS: {}", chain(&e)),
        })?;
        Ok(HttpSource {
            client,
            base,
            deadline: Instant::now() + options.max_time,
            max_time: options.max_time,
        })
    }

    fn url(&self, name: &str) -> Result<Url, FetchError> {
        self.base.join(name).map_err(|e| FetchError::Other {
            url: format!("{}{name}", self.base),
            reason: e.to_string(),
        })
    }

    fn timeout(&self, url: &Url) -> FetchError {
        FetchError::Timeout {
            url: url.to_string(),
            secs: self.max_time.as_secs().max(1),
        }
    }
}

impl Source for HttpSource {
    fn locate(&self, name: &str) -> String {
        self.url(name)
            .map_or_else(|_| format!("{}{name}", self.base), |u| u.to_string())
    }

    fn get(&mut self, name: &str, limit: u64) -> Result<Option<Vec<u8>>, FetchError> {
        let url = self.url(name)?;
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(self.timeout(&url));
        }
        // A per-request timeout covers connecting, the headers and the whole body (reqwest
        // applies it to the body reads too), so a server trickling bytes cannot hold us.
        let mut response = self
            .client
            .get(url.clone())
            .timeout(remaining)
            // A cache between us and the host must not pair a stale index with a fresh
            // signature (or stale files with a fresh index): the checks would refuse the mix.
            .header(reqwest::header::CACHE_CONTROL, "no-cache")
            .send()
            .map_err(|e| self.classify(&url, &e))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::GONE {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(FetchError::Status {
                url: url.to_string(),
                status: status.as_u16(),
            });
        }
        let declared = response.content_length();
        if declared.is_some_and(|n| n > limit) {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        let mut body = Vec::new();
        let read = (&mut response)
            .take(limit.saturating_add(1))
            .read_to_end(&mut body);
        let got = body.len() as u64;
        if let Err(e) = read {
            if Instant::now() >= self.deadline || is_timeout(&e) {
                return Err(self.timeout(&url));
            }
            if let Some(expected) = declared.filter(|&n| got < n) {
                return Err(FetchError::Truncated {
                    url: url.to_string(),
                    got,
                    expected,
                });
            }
            return Err(FetchError::Other {
                url: url.to_string(),
                reason: chain(&e),
            });
        }
        if got > limit {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                limit,
            });
        }
        if let Some(expected) = declared.filter(|&n| got < n) {
            return Err(FetchError::Truncated {
                url: url.to_string(),
                got,
                expected,
            });
        }
        Ok(Some(body))
    }
}

impl HttpSource {
    fn classify(&self, url: &Url, error: &reqwest::Error) -> FetchError {
        if error.is_timeout() || Instant::now() >= self.deadline {
            self.timeout(url)
        } else if error.is_redirect() {
            FetchError::Redirect {
                url: url.to_string(),
                reason: source_chain(error),
            }
        } else if error.is_connect() {
            FetchError::Connect {
                url: url.to_string(),
                reason: source_chain(error),
            }
        } else {
            FetchError::Other {
                url: url.to_string(),
                reason: chain(error),
            }
        }
    }
}

/// Whether an I/O error from a response body is reqwest's deadline.
fn is_timeout(error: &std::io::Error) -> bool {
    if error.kind() == std::io::ErrorKind::TimedOut {
        return true;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = error.get_ref().map(|e| e as _);
    while let Some(e) = source {
        if e.downcast_ref::<reqwest::Error>()
            .is_some_and(reqwest::Error::is_timeout)
        {
            return true;
        }
        source = e.source();
    }
    false
}

/// An error and its causes, `: `-separated, as a user reads them.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        let part = e.to_string();
        // hyper's "client error (Connect)" only says which layer; its cause says what happened.
        if !text.contains(&part) && !part.starts_with("client error (") {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = e.source();
    }
    text
}

/// The causes of an error without its own text (reqwest's own text repeats the URL that the
/// message already names).
fn source_chain(error: &dyn std::error::Error) -> String {
    let mut source = error.source();
    // Skip wrappers that only name a layer, down to the first cause that says something.
    while let Some(e) = source {
        if !e.to_string().starts_with("client error (") {
            return chain(e);
        }
        source = e.source();
    }
    error.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_builds_without_a_preinstalled_provider() {
        let options = HttpOptions {
            connect_timeout: Duration::from_secs(1),
            max_time: Duration::from_secs(1),
            proxy_from_env: false,
        };
        assert!(http_client(&options).is_ok());
    }
}

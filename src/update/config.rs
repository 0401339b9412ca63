//! gpu-doctor's config file and per-user folders, found the XDG way from the host's
//! environment snapshot (never the live process environment, so tests inject their own).
//!
//! `$XDG_CONFIG_HOME/gpu-doctor/config.toml`, else `~/.config/gpu-doctor/config.toml`:
//!
//! ```toml
//! # Where `gpu-doctor manifest update` downloads from (a folder holding index.json).
//! manifest_url = "https://mirror.example.org/gpu-doctor/manifests/"
//! # A public key file to trust instead of the built-in key (relative to this file's folder).
//! manifest_pubkey = "mirror.pub"
//! ```
//!
//! Keys this build does not know are ignored, so a config written for a newer gpu-doctor
//! still works with an older one; a known key with the wrong type is an error naming the file.
//! Under `--root DIR` the folders are those inside DIR, like every other path.
//!
//! Depends on [`crate::host`] (environment, root) and toml.

use std::path::{Path, PathBuf};

use crate::host::Host;

/// The settings this build reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The file they came from; `None` when there is no config file.
    pub path: Option<PathBuf>,
    /// `manifest_url`: default location for `manifest update`.
    pub manifest_url: Option<String>,
    /// `manifest_pubkey`: a public key file, already resolved against the config folder.
    pub manifest_pubkey: Option<PathBuf>,
}

/// Why the config file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
}

/// Per-user folders, as real paths on the machine running gpu-doctor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirs {
    /// `…/gpu-doctor/config.toml`.
    pub config_file: Option<PathBuf>,
    /// `…/gpu-doctor`: the data folder that holds the installed manifest set.
    pub data_dir: Option<PathBuf>,
}

impl Dirs {
    /// Resolves the folders from `XDG_CONFIG_HOME` / `XDG_DATA_HOME` (absolute values only, as
    /// the XDG spec says) or `HOME`.
    #[must_use]
    pub fn of(host: &Host) -> Dirs {
        let env = &host.env;
        let home = env.path("HOME");
        let base = |xdg: &str, fallback: &str| {
            env.path(xdg)
                .or_else(|| home.as_ref().map(|h| h.join(fallback)))
                .map(|p| real(host, &p.join("gpu-doctor")))
        };
        Dirs {
            config_file: base("XDG_CONFIG_HOME", ".config").map(|d| d.join("config.toml")),
            data_dir: base("XDG_DATA_HOME", ".local/share"),
        }
    }
}

/// A machine path as a path on the real filesystem: itself, or inside `--root`.
fn real(host: &Host, path: &Path) -> PathBuf {
    let relative = path.strip_prefix("/").unwrap_or(path);
    host.fs.root().join(relative)
}

/// Reads the config file; no file is an empty config.
///
/// # Errors
/// When the file exists but cannot be read, is not TOML, or a known key has the wrong type.
pub fn load(dirs: &Dirs) -> Result<Config, ConfigError> {
    let Some(path) = &dirs.config_file else {
        return Ok(Config::default());
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
        Err(source) => {
            return Err(ConfigError::Read {
                path: path.clone(),
                source,
            });
        }
    };
    parse(&text, path)
}

/// Parses config text read from `path`.
///
/// # Errors
/// When it is not TOML or a known key is not a string.
pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let error = |message: String| ConfigError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| error(e.to_string()))?;
    let string = |key: &str| -> Result<Option<String>, ConfigError> {
        match table.get(key) {
            None => Ok(None),
            Some(toml::Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.trim().to_string())),
            Some(toml::Value::String(_)) => Err(error(format!("`{key}` is empty"))),
            Some(other) => Err(error(format!(
                "`{key}` must be a string, not a {}",
                other.type_str()
            ))),
        }
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    Ok(Config {
        path: Some(path.to_path_buf()),
        manifest_url: string("manifest_url")?,
        manifest_pubkey: string("manifest_pubkey")?.map(|p| folder.join(p)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Env;
    use std::time::Duration;

    fn host(vars: &[(&str, &str)]) -> Host {
        Host::real(
            Env::from_pairs(vars.iter().copied()),
            Duration::from_secs(1),
        )
    }

    #[test]
    fn xdg_variables_win_over_home_and_must_be_absolute() {
        let dirs = Dirs::of(&host(&[("HOME", "/home/u")]));
        assert_eq!(
            dirs.config_file.as_deref(),
            Some(Path::new("/home/u/.config/gpu-doctor/config.toml"))
        );
        assert_eq!(
            dirs.data_dir.as_deref(),
            Some(Path::new("/home/u/.local/share/gpu-doctor"))
        );
        let dirs = Dirs::of(&host(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/cfg"),
            ("XDG_DATA_HOME", "relative/data"),
        ]));
        assert_eq!(
            dirs.config_file.as_deref(),
            Some(Path::new("/cfg/gpu-doctor/config.toml"))
        );
        assert_eq!(
            dirs.data_dir.as_deref(),
            Some(Path::new("/home/u/.local/share/gpu-doctor"))
        );
        let none = Dirs::of(&host(&[]));
        assert_eq!(none.config_file, None);
        assert_eq!(none.data_dir, None);
    }

    #[test]
    fn under_root_the_folders_are_inside_it() {
        let h = Host::rooted(
            "/fx/root",
            Env::from_pairs([("HOME", "/root")]),
            Duration::from_secs(1),
        );
        assert_eq!(
            Dirs::of(&h).data_dir.as_deref(),
            Some(Path::new("/fx/root/root/.local/share/gpu-doctor"))
        );
    }

    #[test]
    fn known_keys_are_read_unknown_keys_ignored() {
        let path = Path::new("/home/u/.config/gpu-doctor/config.toml");
        let config = parse(
            "manifest_url = \"https://m.example/\"\nmanifest_pubkey = \"keys/m.pub\"\nfuture = 1\n",
            path,
        )
        .expect("parses");
        assert_eq!(config.manifest_url.as_deref(), Some("https://m.example/"));
        assert_eq!(
            config.manifest_pubkey.as_deref(),
            Some(Path::new("/home/u/.config/gpu-doctor/keys/m.pub"))
        );
        let absolute = parse("manifest_pubkey = \"/etc/m.pub\"", path).expect("parses");
        assert_eq!(
            absolute.manifest_pubkey.as_deref(),
            Some(Path::new("/etc/m.pub"))
        );
    }

    #[test]
    fn wrong_types_and_bad_toml_name_the_file() {
        let path = Path::new("/c/config.toml");
        let e = parse("manifest_url = 3", path).expect_err("type");
        assert_eq!(
            e.to_string(),
            "config file /c/config.toml: `manifest_url` must be a string, not a integer"
        );
        let e = parse("manifest_url = ", path).expect_err("toml");
        assert!(
            e.to_string().starts_with("config file /c/config.toml: "),
            "{e}"
        );
    }

    #[test]
    fn a_missing_file_is_an_empty_config() {
        let dirs = Dirs {
            config_file: Some(PathBuf::from("/nonexistent/gpu-doctor/config.toml")),
            data_dir: None,
        };
        assert_eq!(load(&dirs).expect("empty"), Config::default());
    }
}

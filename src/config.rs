//! gpu-doctor's settings: the config file, the `GPU_DOCTOR_*` variables that override it, and
//! the per-user folders, all read through the host's environment snapshot (never the live
//! process environment, so tests inject their own).
//!
//! Precedence, highest first: a command-line flag, a `GPU_DOCTOR_*` variable, the config file,
//! the built-in default. [`load`] merges the middle two; callers apply their flag with
//! `flag.or(config.x)` and their default after that, so there is one rule everywhere.
//!
//! The file is `--config FILE`, else `$GPU_DOCTOR_CONFIG`, else
//! `$XDG_CONFIG_HOME/gpu-doctor/config.toml`, else `~/.config/gpu-doctor/config.toml`:
//!
//! ```toml
//! # Findings of this severity or worse fail `gpu-doctor check`: error, warning or never.
//! fail_on = "warning"
//! # Seconds any one command (nvidia-smi, nvcc, python) may run.
//! timeout = 10
//! # Seconds each framework's import may take under `doctor --deep` / `smoke --frameworks`.
//! deep_timeout = 90
//! # auto, always or never (NO_COLOR set in the environment wins over this).
//! color = "never"
//! # Where `gpu-doctor manifest update` downloads from (a folder holding index.json).
//! manifest_url = "https://mirror.example.org/gpu-doctor/manifests/"
//! # The publisher's public key file, one key a line (relative to this file's folder).
//! manifest_pubkey = "mirror.pub"
//! ```
//!
//! Keys this build does not know are ignored, so a config written for a newer gpu-doctor
//! still works with an older one; a known key with a wrong value is an error naming the file
//! and the key. A file named by `--config` or `GPU_DOCTOR_CONFIG` must exist; the default one
//! may be missing. Under `--root DIR` the default folders are those inside DIR, like every
//! other path; a file named explicitly is a path on the machine gpu-doctor runs on.
//!
//! Depends on [`crate::host`] (environment, root), the enums it reads ([`crate::choice`]) and
//! toml. The resolved settings of each command are built over it in `crate::commands::settings`.

use std::path::{Path, PathBuf};

use crate::check::FailOn;
use crate::choice::Choice;
use crate::host::{Env, Host};
use crate::present::paint::ColorChoice;

/// The variable that names the config file.
pub(crate) const CONFIG_VAR: &str = "GPU_DOCTOR_CONFIG";

/// Each setting: its key in the file and the variable that overrides it.
pub(crate) const KEYS: [(&str, &str); 5] = [
    ("fail_on", "GPU_DOCTOR_FAIL_ON"),
    ("timeout", "GPU_DOCTOR_TIMEOUT"),
    ("deep_timeout", "GPU_DOCTOR_DEEP_TIMEOUT"),
    ("manifest_url", "GPU_DOCTOR_MANIFEST_URL"),
    ("manifest_pubkey", "GPU_DOCTOR_MANIFEST_PUBKEY"),
];

/// Every key of the file, in the order `-v` lists them.
const FILE_KEYS: [&str; 6] = [
    "fail_on",
    "timeout",
    "deep_timeout",
    "color",
    "manifest_url",
    "manifest_pubkey",
];

/// The settings this build reads, each from the environment or the file (or neither).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Config {
    /// The file they came from; `None` when there is no config file.
    pub path: Option<PathBuf>,
    /// `fail_on`: `check`'s default `--fail-on`.
    pub fail_on: Option<FailOn>,
    /// `timeout`: seconds per command, the default of `--timeout`.
    pub timeout: Option<f64>,
    /// `deep_timeout`: seconds per framework import, the default of `--deep-timeout`.
    pub deep_timeout: Option<f64>,
    /// `color`: the default of `--color`.
    pub color: Option<ColorChoice>,
    /// `manifest_url`: default location for `manifest update`.
    pub manifest_url: Option<String>,
    /// `manifest_pubkey`: a public key file, already resolved against the config folder (or,
    /// from the variable, against the current folder).
    pub manifest_pubkey: Option<PathBuf>,
    /// Where each value that is set came from, in the file's key order: `(key, origin)` with origin
    /// the variable's name or the file's path. For `-v`.
    pub origins: Vec<(&'static str, String)>,
}

/// Why the settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {}: {message}", path.display())]
    Parse { path: PathBuf, message: String },
    #[error("{variable}={value:?}: {message}")]
    Variable {
        variable: &'static str,
        value: String,
        message: String,
    },
}

/// Per-user folders, as real paths on the machine running gpu-doctor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dirs {
    /// `…/gpu-doctor/config.toml`.
    pub config_file: Option<PathBuf>,
    /// `…/gpu-doctor`: the data folder that holds the installed manifest set.
    pub data_dir: Option<PathBuf>,
}

impl Dirs {
    /// Resolves the folders from `XDG_CONFIG_HOME` / `XDG_DATA_HOME` (absolute values only, as
    /// the XDG spec says) or `HOME`.
    #[must_use]
    pub(crate) fn of(host: &Host) -> Dirs {
        let env = &host.env;
        let home = env.path("HOME");
        let base = |xdg: &str, fallback: &str| {
            env.path(xdg)
                .or_else(|| home.as_ref().map(|h| h.join(fallback)))
                .and_then(|p| real(host, &p.join("gpu-doctor")))
        };
        Dirs {
            config_file: base("XDG_CONFIG_HOME", ".config").map(|d| d.join("config.toml")),
            data_dir: base("XDG_DATA_HOME", ".local/share"),
        }
    }
}

/// The config file is text of a few lines; more than this is not a config file.
const CONFIG_LIMIT: u64 = 1024 * 1024;

/// A machine path as a path on the real filesystem: itself, or inside `--root` with its links
/// resolved inside the root (so nothing found through it leads out). `None` for a link loop.
fn real(host: &Host, path: &Path) -> Option<PathBuf> {
    if host.fs.is_real_root() {
        return Some(path.to_path_buf());
    }
    host.fs.real_path(path).ok()
}

/// The default config file as a machine path (`$XDG_CONFIG_HOME/gpu-doctor/config.toml` or
/// `$HOME/.config/...`), before any link is resolved.
fn default_config_path(host: &Host) -> Option<PathBuf> {
    let env = &host.env;
    env.path("XDG_CONFIG_HOME")
        .or_else(|| env.path("HOME").map(|h| h.join(".config")))
        .map(|p| p.join("gpu-doctor").join("config.toml"))
}

/// Reads the settings: the config file (`explicit` is `--config`), then the `GPU_DOCTOR_*`
/// variables over it.
///
/// # Errors
/// When a file named explicitly is missing, the file cannot be read or parsed, or a value
/// (in the file or a variable) is not one the key takes.
pub(crate) fn load(host: &Host, explicit: Option<&Path>) -> Result<Config, ConfigError> {
    let named = explicit
        .map(Path::to_path_buf)
        .or_else(|| host.env.non_empty(CONFIG_VAR).map(PathBuf::from));
    let mut config = match named {
        // A file the user named is a path on this host, read as given (bounded, never
        // blocking on a FIFO); that it cannot be read is an error.
        Some(path) => match crate::host::fs::read_regular(&path, CONFIG_LIMIT) {
            Ok((_, true)) => return Err(too_large(path)),
            Ok((bytes, false)) => parse(&String::from_utf8_lossy(&bytes), &path)?,
            Err(source) => return Err(ConfigError::Read { path, source }),
        },
        // The default file is the machine's: under `--root` it is read through the rooted
        // filesystem, so a link in the fixture's home cannot lead out of the root. That it
        // cannot be read is a warning: the defaults still work, and a broken home folder must
        // not stop every command.
        None => match default_config_path(host) {
            None => Config::default(),
            Some(machine) => match host.fs.read_bytes_limited(&machine, CONFIG_LIMIT + 1) {
                Ok(bytes) if bytes.len() as u64 > CONFIG_LIMIT => {
                    return Err(too_large(real(host, &machine).unwrap_or(machine)));
                }
                Ok(bytes) => {
                    let shown = real(host, &machine).unwrap_or(machine);
                    parse(&String::from_utf8_lossy(&bytes), &shown)?
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
                Err(e) => {
                    crate::term::warn(&format!(
                        "config file {}: {e}; using the defaults",
                        machine.display()
                    ));
                    Config::default()
                }
            },
        },
    };
    overlay_env(&mut config, &host.env)?;
    Ok(config)
}

/// A config file over [`CONFIG_LIMIT`]: said as such, not cut and then reported as a TOML
/// error in its middle.
fn too_large(path: PathBuf) -> ConfigError {
    ConfigError::Parse {
        path,
        message: "config file larger than 1 MiB; not read".to_string(),
    }
}

/// The most lines, and characters per line, of a TOML error that are quoted: the parser
/// quotes the offending line whole, which may be 200 KB long.
const ERROR_LINES: usize = 8;
const ERROR_LINE_CHARS: usize = 160;

/// A TOML error told briefly: each line cut with a marker, and only the first few lines.
fn brief(message: &str) -> String {
    let mut lines: Vec<String> = message
        .lines()
        .take(ERROR_LINES)
        .map(|line| {
            let n = line.chars().count();
            if n > ERROR_LINE_CHARS {
                let kept: String = line.chars().take(ERROR_LINE_CHARS).collect();
                format!(
                    "{kept}{}{} more characters]",
                    crate::sanitize::CUT_MARK,
                    n - ERROR_LINE_CHARS
                )
            } else {
                line.to_string()
            }
        })
        .collect();
    let total = message.lines().count();
    if total > ERROR_LINES {
        lines.push(format!("…[{} more lines]", total - ERROR_LINES));
    }
    lines.join("\n")
}

/// Parses config text read from `path`.
///
/// # Errors
/// When it is not TOML or a known key has a wrong value.
pub(crate) fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
    let error = |message: String| ConfigError::Parse {
        path: path.to_path_buf(),
        message,
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| error(brief(&e.to_string())))?;
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
    let seconds = |key: &str| -> Result<Option<f64>, ConfigError> {
        let value = match table.get(key) {
            None => return Ok(None),
            #[expect(clippy::cast_precision_loss, reason = "seconds up to 3600")]
            Some(toml::Value::Integer(n)) => *n as f64,
            Some(toml::Value::Float(f)) => *f,
            Some(other) => {
                return Err(error(format!(
                    "`{key}` must be a number of seconds, not a {}",
                    other.type_str()
                )));
            }
        };
        check_seconds(value)
            .map(Some)
            .map_err(|m| error(format!("`{key}` {m}")))
    };
    let choice = |key: &str, parse: &dyn Fn(&str) -> Result<(), String>| {
        string(key)?
            .map(|v| {
                parse(&v)
                    .map(|()| v)
                    .map_err(|m| error(format!("`{key}` {m}")))
            })
            .transpose()
    };
    let folder = path.parent().unwrap_or(Path::new("."));
    let fail_on = choice("fail_on", &|v| value_enum::<FailOn>(v).map(drop))?
        .and_then(|v| value_enum::<FailOn>(&v).ok());
    let color = choice("color", &|v| value_enum::<ColorChoice>(v).map(drop))?
        .and_then(|v| value_enum::<ColorChoice>(&v).ok());
    let mut config = Config {
        path: Some(path.to_path_buf()),
        fail_on,
        timeout: seconds("timeout")?,
        deep_timeout: seconds("deep_timeout")?,
        color,
        manifest_url: string("manifest_url")?,
        manifest_pubkey: string("manifest_pubkey")?.map(|p| folder.join(p)),
        origins: Vec::new(),
    };
    let shown = path.display().to_string();
    config.origins = FILE_KEYS
        .iter()
        .filter(|key| config.is_set(key))
        .map(|key| (*key, shown.clone()))
        .collect();
    Ok(config)
}

impl Config {
    fn is_set(&self, key: &str) -> bool {
        match key {
            "fail_on" => self.fail_on.is_some(),
            "timeout" => self.timeout.is_some(),
            "deep_timeout" => self.deep_timeout.is_some(),
            "color" => self.color.is_some(),
            "manifest_url" => self.manifest_url.is_some(),
            "manifest_pubkey" => self.manifest_pubkey.is_some(),
            _ => false,
        }
    }

    /// Where `key`'s value came from (a variable or the file), or `None` when it is unset.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn origin(&self, key: &str) -> Option<&str> {
        self.origins
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, o)| o.as_str())
    }
}

/// Sets every value that has a `GPU_DOCTOR_*` variable over what the file said.
fn overlay_env(config: &mut Config, env: &Env) -> Result<(), ConfigError> {
    for (key, variable) in KEYS {
        let Some(value) = env.non_empty(variable).map(str::trim) else {
            continue;
        };
        let bad = |message: String| ConfigError::Variable {
            variable,
            value: value.to_string(),
            message,
        };
        match key {
            "fail_on" => config.fail_on = Some(value_enum(value).map_err(bad)?),
            "color" => config.color = Some(value_enum(value).map_err(bad)?),
            "timeout" | "deep_timeout" => {
                let seconds = value
                    .parse::<f64>()
                    .map_err(|_| bad("not a number of seconds".to_string()))
                    .and_then(|s| check_seconds(s).map_err(bad))?;
                if key == "timeout" {
                    config.timeout = Some(seconds);
                } else {
                    config.deep_timeout = Some(seconds);
                }
            }
            "manifest_url" => config.manifest_url = Some(value.to_string()),
            _ => config.manifest_pubkey = Some(PathBuf::from(value)),
        }
        config.origins.retain(|(k, _)| *k != key);
        config.origins.push((key, variable.to_string()));
    }
    config
        .origins
        .sort_by_key(|(k, _)| FILE_KEYS.iter().position(|key| key == k));
    Ok(())
}

/// A seconds value every timeout accepts: more than 0, at most an hour.
///
/// # Errors
/// What is wrong with it, to follow the name of the setting.
pub(crate) fn check_seconds(value: f64) -> Result<f64, String> {
    if value.is_finite() && value > 0.0 && value <= 3600.0 {
        Ok(value)
    } else {
        Err(format!(
            "must be more than 0 and at most 3600 seconds, not {value}"
        ))
    }
}

/// One of an enum's names (`error`, `never`, ...), case-insensitively.
fn value_enum<T: Choice>(text: &str) -> Result<T, String> {
    crate::choice::parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;
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
            "manifest_url = \"https://m.example/\"\nmanifest_pubkey = \"keys/m.pub\"\n\
             fail_on = \"Warning\"\ntimeout = 12\ndeep_timeout = 2.5\ncolor = \"never\"\nfuture = 1\n",
            path,
        )
        .expect("parses");
        assert_eq!(config.manifest_url.as_deref(), Some("https://m.example/"));
        assert_eq!(
            config.manifest_pubkey.as_deref(),
            Some(Path::new("/home/u/.config/gpu-doctor/keys/m.pub"))
        );
        assert_eq!(config.fail_on, Some(FailOn::Warning));
        assert_eq!(config.timeout, Some(12.0));
        assert_eq!(config.deep_timeout, Some(2.5));
        assert_eq!(config.color, Some(ColorChoice::Never));
        assert_eq!(config.origins.len(), 6);
        assert_eq!(
            config.origin("timeout"),
            Some(path.to_str().expect("utf-8"))
        );
        let absolute = parse("manifest_pubkey = \"/etc/m.pub\"", path).expect("parses");
        assert_eq!(
            absolute.manifest_pubkey.as_deref(),
            Some(Path::new("/etc/m.pub"))
        );
    }

    #[test]
    fn wrong_values_and_bad_toml_name_the_file_and_key() {
        let path = Path::new("/c/config.toml");
        let message = |text: &str| parse(text, path).expect_err(text).to_string();
        assert_eq!(
            message("manifest_url = 3"),
            "config file /c/config.toml: `manifest_url` must be a string, not a integer"
        );
        assert_eq!(
            message("fail_on = \"sometimes\""),
            "config file /c/config.toml: `fail_on` must be one of error, warning, never, not \"sometimes\""
        );
        assert_eq!(
            message("timeout = 0"),
            "config file /c/config.toml: `timeout` must be more than 0 and at most 3600 seconds, not 0"
        );
        assert_eq!(
            message("timeout = \"5\""),
            "config file /c/config.toml: `timeout` must be a number of seconds, not a string"
        );
        assert!(
            message("manifest_url = ").starts_with("config file /c/config.toml: "),
            "toml errors name the file"
        );
    }

    #[test]
    fn variables_override_the_file_and_say_so() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "timeout = 7\nfail_on = \"never\"\ncolor = \"always\"\n",
        )
        .expect("write");
        let h = host(&[("GPU_DOCTOR_TIMEOUT", "9"), ("GPU_DOCTOR_COLOR", "")]);
        let config = load(&h, Some(&file)).expect("loads");
        assert_eq!(config.timeout, Some(9.0), "the variable wins over the file");
        assert_eq!(
            config.fail_on,
            Some(FailOn::Never),
            "the file wins over nothing"
        );
        assert_eq!(
            config.color,
            Some(ColorChoice::Always),
            "an empty variable is unset"
        );
        assert_eq!(config.origin("timeout"), Some("GPU_DOCTOR_TIMEOUT"));
        assert_eq!(config.origin("fail_on"), file.to_str());
        let e = load(&host(&[("GPU_DOCTOR_FAIL_ON", "loud")]), Some(&file)).expect_err("bad");
        assert_eq!(
            e.to_string(),
            "GPU_DOCTOR_FAIL_ON=\"loud\": must be one of error, warning, never, not \"loud\""
        );
    }

    #[test]
    fn a_named_file_must_exist_the_default_one_need_not() {
        let missing = Path::new("/nonexistent/gpu-doctor/config.toml");
        let e = load(&host(&[]), Some(missing)).expect_err("named");
        assert!(
            e.to_string()
                .starts_with("cannot read the config file /nonexistent/gpu-doctor/config.toml"),
            "{e}"
        );
        let e = load(&host(&[(CONFIG_VAR, "/nonexistent/c.toml")]), None).expect_err("env");
        assert!(e.to_string().contains("/nonexistent/c.toml"), "{e}");
        let quiet = load(&host(&[("HOME", "/nonexistent-home")]), None).expect("default");
        assert_eq!(quiet, Config::default());
    }

    #[test]
    fn a_config_over_1_mib_is_said_so_and_toml_errors_are_brief() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.toml");
        let mut text = "timeout = 3\n".repeat(100_000);
        text.push_str(&"#".repeat(1 << 20));
        std::fs::write(&big, &text).unwrap();
        let e = load(&host(&[]), Some(&big))
            .expect_err("too large")
            .to_string();
        assert!(e.contains("config file larger than 1 MiB"), "{e}");
        // The default file too, read through the rooted filesystem.
        let root = dir.path().join("root");
        let conf = root.join("home/u/.config/gpu-doctor");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("config.toml"), &text).unwrap();
        let rooted = Host::rooted(
            &root,
            Env::from_pairs([("HOME", "/home/u")]),
            Duration::from_secs(1),
        );
        let e = load(&rooted, None).expect_err("too large").to_string();
        assert!(e.contains("config file larger than 1 MiB"), "{e}");
        // A 200 KB bad line is quoted in a few hundred characters.
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, format!("timeout = [{}\n", "1, ".repeat(70_000))).unwrap();
        let e = load(&host(&[]), Some(&bad)).expect_err("bad").to_string();
        assert!(e.len() < 2_000, "{} bytes: {}", e.len(), &e[..300]);
        assert!(e.contains("more characters]"), "{e}");
    }
}

//! Settings, resolved once per run: what the command line said, over the `GPU_DOCTOR_*`
//! variables and the config file ([`crate::config`]), over the built-in defaults. The one
//! place that applies that precedence (flag > variable > file > default); commands receive
//! plain values. The exception is `manifest update`'s location and keys, which
//! `crate::update::install` resolves from the flags and the [`Config`] together with the
//! placeholder location and the key-file reading, as one tested unit.
//!
//! The variables are read from the host's environment snapshot, not by clap, so tests can set
//! them and a bad value is reported as the variable it came from.

use std::io::IsTerminal;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::check::FailOn;
use crate::cli::Cli;
use crate::config::Config;
use crate::exit::CliError;
use crate::host::{Env, Host};
use crate::manifest::SetInUse;
use crate::present::paint::{ColorChoice, Paint};

/// The settings every command shares, and the machine it examines.
#[derive(Debug)]
pub(super) struct Settings {
    /// The machine, or `--root` / `--host-root` folder, with the per-command deadline set.
    pub host: Host,
    /// The config file and variables, for the settings of single commands.
    pub config: Config,
    /// The manifest set of this run (the installed one when good, else the built-in one),
    /// chosen on first use and handed to every face, planner and probe: the one place a set
    /// is picked.
    pub manifests: Arc<SetInUse>,
    /// `--color`, when given.
    color: Option<ColorChoice>,
}

impl Settings {
    /// Builds the host the command line asked for: the real machine, `--root DIR` or
    /// `--host-root DIR`, with the config file and variables read and `--timeout` resolved
    /// over them.
    ///
    /// # Errors
    /// When `--root` names something that is not a folder, the settings cannot be read, or a
    /// timeout is not a positive number of seconds (all usage errors).
    pub(super) fn resolve(cli: &Cli) -> Result<Settings, CliError> {
        let env = Env::from_process();
        let mut host = match (&cli.root, &cli.host_root) {
            (Some(root), _) => {
                if !root.is_dir() {
                    return Err(CliError::usage(format!(
                        "--root {}: not a folder",
                        root.display()
                    )));
                }
                let root = root
                    .canonicalize()
                    .map_err(|e| CliError::usage(format!("--root {}: {e}", root.display())))?;
                Host::rooted(root, env, crate::host::DEFAULT_TIMEOUT)
            }
            (None, Some(dir)) => host_rooted(dir, env)?,
            (None, None) => {
                let cache = (!cli.no_cache && env.get("GPU_DOCTOR_NO_CACHE") != Some("1"))
                    .then(|| crate::probe::interp_cache::default_dir(&env))
                    .flatten();
                let mut host = Host::real(env, crate::host::DEFAULT_TIMEOUT);
                host.interpreter_cache = cache;
                host
            }
        };
        let config = crate::config::load(&host, cli.config.as_deref())
            .map_err(|e| CliError::usage(e.to_string()))?;
        let timeout = seconds("--timeout", cli.timeout)?.or(config.timeout);
        if let Some(timeout) = timeout {
            host.timeout = Duration::from_secs_f64(timeout);
        }
        let manifests = Arc::new(crate::update::set_in_use(host.clone()));
        let settings = Settings {
            host,
            config,
            manifests,
            color: cli.color,
        };
        settings.say();
        Ok(settings)
    }

    /// Whether text for a terminal (`terminal`) or not is coloured: `--color`, then
    /// `NO_COLOR` / `CLICOLOR_FORCE`, then the config file, then whether it is a terminal.
    #[must_use]
    pub(super) fn color(&self, terminal: bool) -> bool {
        crate::present::paint::enabled(self.color, &self.host.env, self.config.color, terminal)
    }

    /// How stdout is painted.
    #[must_use]
    pub(super) fn paint(&self) -> Paint {
        Paint::new(self.color(std::io::stdout().is_terminal()))
    }

    /// `check --fail-on`: the flag, else the variable or file, else `error`.
    #[must_use]
    pub(super) fn fail_on(&self, flag: Option<FailOn>) -> FailOn {
        flag.or(self.config.fail_on).unwrap_or(FailOn::Error)
    }

    /// `--deep-timeout` when `wanted`: the flag, else the variable or file, else `default`, as
    /// the deep scan's options.
    ///
    /// # Errors
    /// When the seconds are not a positive number up to an hour.
    pub(super) fn deep(
        &self,
        wanted: bool,
        flag: Option<f64>,
        default: f64,
        smoke: bool,
    ) -> Result<Option<crate::deep::Options>, CliError> {
        if !wanted {
            return Ok(None);
        }
        let secs = flag.or(self.config.deep_timeout).unwrap_or(default);
        crate::deep::Options::new(secs, smoke)
            .map(Some)
            .map_err(CliError::usage)
    }

    /// `-v`: which settings were read and from where.
    fn say(&self) {
        if crate::term::level() < 1 {
            return;
        }
        match &self.config.path {
            Some(path) => crate::term::verbose(&format!("config file {}", path.display())),
            None => crate::term::verbose("no config file"),
        }
        for (key, origin) in &self.config.origins {
            crate::term::verbose(&format!("  {key} from {origin}"));
        }
        crate::term::verbose(&format!(
            "each command may run {} s",
            self.host.timeout.as_secs_f64()
        ));
    }
}

/// A seconds flag, checked the way every timeout is ([`crate::config::check_seconds`]).
///
/// # Errors
/// A usage error naming the flag.
pub(super) fn seconds(flag: &str, value: Option<f64>) -> Result<Option<f64>, CliError> {
    value
        .map(|v| {
            crate::config::check_seconds(v).map_err(|m| CliError::usage(format!("{flag} {m}")))
        })
        .transpose()
}

/// `--host-root DIR`: a node's `/` mounted in this container (`/` too is taken at its word:
/// files read, found programs not run).
fn host_rooted(dir: &Path, env: Env) -> Result<Host, CliError> {
    if !dir.is_dir() {
        return Err(CliError::usage(format!(
            "--host-root {}: not a folder (mount the node's / there, e.g. a read-only hostPath at /host)",
            dir.display()
        )));
    }
    let dir = dir
        .canonicalize()
        .map_err(|e| CliError::usage(format!("--host-root {}: {e}", dir.display())))?;
    Ok(Host::host_rooted(dir, env, crate::host::DEFAULT_TIMEOUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_flags_are_checked_and_named() {
        assert_eq!(seconds("--timeout", None), Ok(None));
        assert_eq!(seconds("--timeout", Some(2.5)), Ok(Some(2.5)));
        let e = seconds("--deep-timeout", Some(0.0)).expect_err("zero");
        assert_eq!(
            e,
            CliError::usage("--deep-timeout must be more than 0 and at most 3600 seconds, not 0")
        );
    }
}

//! The Python of the environment a plan touches, decided once: an existing environment's own
//! interpreter; for a new one, the target release's `python3` (repos.toml `[[python]]`), or the
//! Python asked for (`--python`, or the one a framework needs), from the release's archive when
//! it has it and through uv when it does not. Pure.

use super::*;
use crate::plan::machine::EnvFact;

/// Where uv is installed when a plan needs a Python the release does not carry: a virtual
/// environment of its own under the user's home, made with the release's `python3`.
pub(crate) const UV_HOME: &str = "/.local/share/gpu-doctor/uv";

/// How a new environment gets its Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewPython {
    /// The release's archive has it: these packages first (`python3-venv`; `python3.11
    /// python3.11-venv`), then `command -m venv`.
    Distro {
        version: String,
        command: String,
        packages: Vec<String>,
        default: bool,
    },
    /// Not an Ubuntu target: the machine's own interpreter, which must be on PATH.
    OnPath { command: String },
    /// The release carries no such Python: uv (pinned, from PyPI, in its own environment made
    /// with the release's `python3` and these packages) installs a managed one and makes the
    /// environment with it.
    Uv {
        version: String,
        uv: String,
        packages: Vec<String>,
    },
}

impl NewPython {
    /// The Python `major.minor` the environment will have, when known.
    #[must_use]
    pub fn version(&self) -> Option<&str> {
        match self {
            NewPython::Distro { version, .. } | NewPython::Uv { version, .. } => Some(version),
            NewPython::OnPath { .. } => None,
        }
    }

    /// The packages the release's archive must give first.
    #[must_use]
    pub fn packages(&self) -> &[String] {
        match self {
            NewPython::Distro { packages, .. } | NewPython::Uv { packages, .. } => packages,
            NewPython::OnPath { .. } => &[],
        }
    }

    /// The command the environment is made with.
    #[must_use]
    pub fn command(&self) -> String {
        match self {
            NewPython::Distro { command, .. } | NewPython::OnPath { command } => command.clone(),
            NewPython::Uv { .. } => "uv".to_string(),
        }
    }

    /// How the plan gets this Python, in words, for the plan's notes.
    #[must_use]
    pub fn how(&self, os: Option<&str>) -> String {
        let os = os.unwrap_or("this system");
        match self {
            NewPython::Distro {
                version,
                packages,
                default: true,
                ..
            } => format!(
                "Python {version} is {os}'s python3; the plan installs {} first (without it \
                 `python3 -m venv` stops: ensurepip is not available)",
                packages.join(" ")
            ),
            NewPython::Distro {
                version, packages, ..
            } => format!(
                "Python {version} comes from {os}'s own archive ({})",
                packages.join(" ")
            ),
            NewPython::OnPath { command } => {
                format!("the environment is made with {command}, which must be on PATH")
            }
            NewPython::Uv { version, uv, .. } => format!(
                "{os}'s archive has no Python {version} (repos.toml [[python]]), so the plan \
                 installs uv {uv} from PyPI into ~{UV_HOME} and lets it install a managed Python \
                 {version} (`uv venv --python {version}`); `--via conda` is the other way"
            ),
        }
    }
}

/// The Python a new environment gets when nothing names one: the machine's own `python3` when
/// the plan is for this machine's system, else the target release's (repos.toml).
pub(super) fn default_version(
    machine: &Machine,
    m: &Manifests,
    d: &Decision<'_>,
) -> Option<String> {
    let Some(apt) = &d.apt else {
        return machine.system_python.clone();
    };
    let this_system = match (&machine.os_id, &machine.os_version) {
        (Some(id), Some(version)) => format!("{id}-{version}") == apt.os,
        _ => false,
    };
    let release = m.repos.default_python(&apt.os).map(|p| p.version.clone());
    if this_system {
        machine.system_python.clone().or(release)
    } else {
        release
    }
}

/// The environment at `path` when the machine has it.
pub(super) fn existing<'a>(machine: &'a Machine, path: &str) -> Option<&'a EnvFact> {
    machine
        .python_envs
        .iter()
        .find(|e| e.path.trim_end_matches('/') == path.trim_end_matches('/'))
}

/// How a new environment gets Python `version` (`None`: whatever the release's `python3` is).
///
/// # Errors
/// A refusal when uv, which a Python the release lacks needs, has no release for the release's
/// own Python in pypi.toml.
pub(super) fn new_python(
    machine: &Machine,
    m: &Manifests,
    d: &Decision<'_>,
    version: Option<&str>,
) -> Result<NewPython, Refusal> {
    let Some(apt) = &d.apt else {
        let command = match (version, machine.system_python.as_deref()) {
            (Some(v), Some(system)) if v != system => format!("python{v}"),
            (Some(v), None) => format!("python{v}"),
            _ => "python3".to_string(),
        };
        return Ok(NewPython::OnPath { command });
    };
    let default = m.repos.default_python(&apt.os);
    let row = match version {
        Some(v) => m.repos.distro_python(&apt.os, v),
        None => default,
    };
    if let Some(row) = row {
        return Ok(NewPython::Distro {
            version: row.version.clone(),
            command: row.command.clone(),
            packages: row.packages.clone(),
            default: row.default,
        });
    }
    let (Some(version), Some(default)) = (version, default) else {
        return Err(Refusal::new(format!(
            "repos.toml records no python3 for {}: the plan cannot say which Python a new \
             environment gets",
            apt.os
        )));
    };
    let arch = super::machine_arch(machine);
    let uv = m
        .pypi
        .newest("uv", None, &default.version, arch, None)
        .ok_or_else(|| {
            Refusal::new(format!(
                "{} has no Python {version} and pypi.toml has no uv for its Python {}: use \
                 `--via conda --python {version}`",
                apt.os, default.version
            ))
        })?;
    Ok(NewPython::Uv {
        version: version.to_string(),
        uv: uv.version.clone(),
        packages: default.packages.clone(),
    })
}

//! What the user asked `plan` for, parsed and checked for form (not for feasibility: that is
//! `decide`'s job, and its answer is a refusal with reasons rather than a usage error).
//!
//! Every value that later reaches a script passes a strict syntax check here (versions are
//! dotted numbers, framework names come from a fixed list), so the plan's own checks can put
//! them into Python snippets as arguments without surprises. Free text (an environment name or
//! path) is not restricted: the shell renderer quotes it. Pure; `clap` only names `--via`'s values.

use serde::Serialize;

pub use crate::framework::FrameworkName;

/// How the plan installs the CUDA stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// NVIDIA's apt repository: driver, toolkit, cuDNN, NCCL system-wide.
    Apt,
    /// A conda environment (CUDA from conda-forge, frameworks as their projects recommend).
    Conda,
    /// A Python virtual environment with the framework's pip wheels.
    Pip,
}

impl Via {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Apt => "apt",
            Via::Conda => "conda",
            Via::Pip => "pip",
        }
    }
}

impl crate::choice::Choice for Via {
    const ALL: &'static [Via] = &[Via::Apt, Via::Conda, Via::Pip];
    fn name(self) -> &'static str {
        self.as_str()
    }
    fn help(self) -> Option<&'static str> {
        Some(match self {
            Via::Apt => "NVIDIA's apt repository: driver, toolkit, cuDNN, NCCL system-wide",
            Via::Conda => {
                "A conda environment (CUDA from conda-forge, frameworks as their projects recommend)"
            }
            Via::Pip => "A Python virtual environment with the framework's pip wheels",
        })
    }
}

/// `--driver`: keep the working driver (the default), the branch the target needs, or a branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DriverChoice {
    /// No `--driver`: a working driver stays. A target it cannot run is refused with the
    /// branch that would run it (`--driver auto` plans that change); a machine without a
    /// working driver gets one.
    Keep,
    /// `--driver auto`: change the driver when the target needs a newer one.
    Auto,
    Branch(u64),
}

/// `--framework torch==2.5.1`, `tensorflow==2.17`, `jax[cuda12]`, `cupy`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FrameworkSpec {
    pub name: FrameworkName,
    /// `cuda12` of `jax[cuda12]`.
    pub extra: Option<String>,
    /// Dotted numbers: a release (`2.5.1`) or a series (`2.17`).
    pub version: Option<String>,
}

/// Everything `plan` was asked for. `None` / `Auto` means "choose for this machine".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// `None`: pip when a framework is named, else apt.
    pub via: Option<Via>,
    /// `12.4`: a CUDA release (major.minor).
    pub cuda: Option<String>,
    pub driver: DriverChoice,
    /// cuDNN major.
    pub cudnn: Option<u64>,
    pub framework: Option<FrameworkSpec>,
    /// `3.11`.
    pub python: Option<String>,
    /// A conda environment name, or a virtual environment's folder for pip.
    pub env: Option<String>,
    /// `ubuntu-22.04`; checked against the manifests by the planner, so an unknown one is a
    /// refusal with the list of known ones rather than a usage error.
    pub os: Option<String>,
}

impl Default for Target {
    fn default() -> Target {
        Target {
            via: None,
            cuda: None,
            driver: DriverChoice::Keep,
            cudnn: None,
            framework: None,
            python: None,
            env: None,
            os: None,
        }
    }
}

impl Target {
    /// Whether the user named anything to install (rather than "fix what is wrong").
    #[must_use]
    pub fn names_a_stack(&self) -> bool {
        self.cuda.is_some()
            || self.cudnn.is_some()
            || self.framework.is_some()
            || matches!(self.driver, DriverChoice::Branch(_))
    }

    /// The `via` in effect: pip for a named framework (how the frameworks ship today), else apt.
    #[must_use]
    pub fn via(&self) -> Via {
        self.via.unwrap_or(if self.framework.is_some() {
            Via::Pip
        } else {
            Via::Apt
        })
    }
}

/// A malformed option value: exit code 2 with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option} {value:?}: {problem}")]
pub struct UsageError {
    pub option: &'static str,
    pub value: String,
    pub problem: String,
}

fn usage(option: &'static str, value: &str, problem: &str) -> UsageError {
    UsageError {
        option,
        value: value.to_string(),
        problem: problem.to_string(),
    }
}

/// Whether `text` is 1 to `max_parts` dot-separated runs of ASCII digits.
fn dotted(text: &str, max_parts: usize) -> bool {
    let parts: Vec<&str> = text.split('.').collect();
    parts.len() <= max_parts
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 6 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `--cuda 12.4` (or `12.4.1`; the plan installs per minor release).
///
/// # Errors
/// When it is not two or three dotted numbers.
pub fn parse_cuda(text: &str) -> Result<String, UsageError> {
    if dotted(text, 3) && text.contains('.') {
        Ok(text.to_string())
    } else {
        Err(usage(
            "--cuda",
            text,
            "expected a CUDA version such as 12.4",
        ))
    }
}

/// `--driver 570` or `--driver auto`.
///
/// # Errors
/// When it is neither `auto` nor a branch number.
pub fn parse_driver(text: &str) -> Result<DriverChoice, UsageError> {
    if text == "auto" {
        return Ok(DriverChoice::Auto);
    }
    let branch = text.split('.').next().unwrap_or_default();
    match branch.parse::<u64>() {
        Ok(n) if dotted(text, 3) && (100..10_000).contains(&n) => Ok(DriverChoice::Branch(n)),
        _ => Err(usage(
            "--driver",
            text,
            "expected a driver branch such as 570, or auto",
        )),
    }
}

/// `--cudnn 9`.
///
/// # Errors
/// When it is not a major version number.
pub fn parse_cudnn(text: &str) -> Result<u64, UsageError> {
    let major = text.split('.').next().unwrap_or_default();
    match major.parse::<u64>() {
        Ok(n) if dotted(text, 4) && (1..100).contains(&n) => Ok(n),
        _ => Err(usage(
            "--cudnn",
            text,
            "expected a cuDNN major version such as 9",
        )),
    }
}

/// `--python 3.11`.
///
/// # Errors
/// When it is not `3.N`.
pub fn parse_python(text: &str) -> Result<String, UsageError> {
    if dotted(text, 2) && text.starts_with("3.") {
        Ok(text.to_string())
    } else {
        Err(usage(
            "--python",
            text,
            "expected a Python version such as 3.11",
        ))
    }
}

/// `--framework torch==2.5.1`, `tensorflow==2.17`, `jax[cuda12]`, `jax[cuda13]==0.8.0`, `cupy`.
///
/// # Errors
/// For an unknown framework, a malformed extra, or a version that is not dotted numbers.
pub fn parse_framework(text: &str) -> Result<FrameworkSpec, UsageError> {
    const PROBLEM: &str = "expected torch, tensorflow, jax or cupy, optionally with ==VERSION \
                           (jax also with [cuda12] or [cuda13])";
    let (head, version) = match text.split_once("==") {
        Some((head, version)) => (head, Some(version)),
        None => (text, None),
    };
    let (name, extra) = match head.split_once('[') {
        Some((name, rest)) => {
            let extra = rest
                .strip_suffix(']')
                .ok_or_else(|| usage("--framework", text, PROBLEM))?;
            (name, Some(extra))
        }
        None => (head, None),
    };
    // `plan` has never taken `check`'s `tf` shorthand; it stays a usage error here.
    let name = FrameworkName::parse(name)
        .filter(|_| name != "tf")
        .ok_or_else(|| usage("--framework", text, PROBLEM))?;
    if let Some(extra) = extra
        && (name != FrameworkName::Jax
            || extra.is_empty()
            || extra.len() > 32
            || !extra
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'))
    {
        return Err(usage("--framework", text, PROBLEM));
    }
    if let Some(version) = version
        && !dotted(version, 4)
    {
        return Err(usage(
            "--framework",
            text,
            "the version must be dotted numbers such as 2.5.1",
        ));
    }
    Ok(FrameworkSpec {
        name,
        extra: extra.map(str::to_string),
        version: version.map(str::to_string),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frameworks_parse_with_extras_and_versions() {
        let torch = parse_framework("torch==2.5.1").unwrap();
        assert_eq!(torch.name, FrameworkName::Torch);
        assert_eq!(torch.version.as_deref(), Some("2.5.1"));
        let jax = parse_framework("jax[cuda13]==0.8.0").unwrap();
        assert_eq!(jax.extra.as_deref(), Some("cuda13"));
        assert_eq!(jax.version.as_deref(), Some("0.8.0"));
        assert_eq!(parse_framework("cupy").unwrap().version, None);
    }

    #[test]
    fn hostile_or_malformed_values_are_usage_errors() {
        for bad in [
            "torch==2.5.1'; rm -rf /",
            "torch==$(touch /tmp/x)",
            "torch[cuda12]",
            "jax[cuda12",
            "jax[$(id)]",
            "numpy",
            "torch==",
            "torch==2..1",
        ] {
            assert!(parse_framework(bad).is_err(), "{bad}");
        }
        assert!(parse_cuda("12").is_err());
        assert!(parse_cuda("12.4; ls").is_err());
        assert!(parse_python("2.7").is_err());
        assert!(parse_python("3.11 ").is_err());
        assert!(parse_driver("570; reboot").is_err());
        assert!(parse_cudnn("nine").is_err());
    }

    #[test]
    fn driver_takes_a_branch_or_auto() {
        assert_eq!(parse_driver("auto"), Ok(DriverChoice::Auto));
        assert_eq!(parse_driver("570"), Ok(DriverChoice::Branch(570)));
        assert_eq!(parse_driver("570.86.10"), Ok(DriverChoice::Branch(570)));
    }

    #[test]
    fn via_defaults_to_pip_for_a_framework() {
        let mut target = Target::default();
        assert_eq!(target.via(), Via::Apt);
        assert!(!target.names_a_stack());
        target.framework = parse_framework("jax[cuda12]").ok();
        assert_eq!(target.via(), Via::Pip);
        assert!(target.names_a_stack());
    }

    #[test]
    fn framework_aliases_are_plans_own() {
        // `pytorch` names torch; `check`'s `tf` shorthand is not a plan framework.
        assert_eq!(
            parse_framework("pytorch==2.5.1").map(|s| s.name),
            Ok(FrameworkName::Torch)
        );
        assert!(parse_framework("tf").is_err());
        assert!(parse_framework("Torch").is_err());
    }
}

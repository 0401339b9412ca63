//! A plan's step as data: what kind of step it is ([`StepKind`], which both planners dispatch
//! on and whose [`StepKind::id`] is the stable name the script, `plan --json` and the TUI
//! print), what it does, and what it is there for ([`Serves`]: finding kinds and the request,
//! never prose to parse). Pure.

use std::borrow::Cow;
use std::fmt;

use serde::{Serialize, Serializer};

use super::cmd::{Command, Guard};
use crate::diagnose::ids::Kind;
use crate::framework::FrameworkName;

/// What a step does. Code matches on this, never on the printed id, so a step cannot be
/// misnamed in one place and dispatched on in another; a new kind is a new arm where it
/// matters (each planner's `serves`) and an id here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepKind {
    /// nouveau blacklisted and the initramfs rebuilt.
    NouveauOff,
    /// NVIDIA's `cuda-keyring` package.
    CudaKeyring,
    /// `apt-get update` after a repository was added.
    AptUpdate,
    /// The kernel headers and build tools DKMS needs.
    DriverPrerequisites,
    /// The NVIDIA driver packages.
    Driver,
    /// Secure Boot's key for an already built module.
    EnrollKey,
    /// `modprobe` of an already built module.
    LoadDriver,
    /// A reboot that loads the module the installed libraries are for.
    Reboot,
    CudaToolkit,
    /// The toolkit's `PATH` and loader lines.
    CudaEnvironment,
    Cudnn,
    Nccl,
    CondaEnv,
    /// CUDA from conda-forge in the conda environment.
    CondaCuda,
    /// The system packages a new Python needs (`python3.X-venv`).
    PythonPackages,
    /// A virtual environment (made with the system Python or uv).
    Venv,
    /// A framework installed with pip into the plan's environment (NVIDIA's planner) or the
    /// ROCm torch wheel (AMD's).
    Framework(FrameworkName),
    /// torch replaced in an environment that has a build that cannot work: fix `nth` (from 0)
    /// of `of`, as the decision lists them.
    ReinstallTorch {
        nth: usize,
        of: usize,
    },
    /// AMD's `amdgpu-install` package.
    AmdgpuInstall,
    /// ROCm through `amdgpu-install`.
    Rocm,
    /// The `render` and `video` groups for the user.
    Groups,
    /// `HSA_OVERRIDE_GFX_VERSION` for every login.
    HsaOverride,
    /// The last step: the doctor (and the smoke test) on the result.
    Verify,
}

impl StepKind {
    /// The stable, shell-safe identifier the script, `plan --json` and the TUI show
    /// (`cuda-keyring`); a lone fix is `reinstall-torch`, several are numbered from 1.
    #[must_use]
    pub fn id(self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            StepKind::NouveauOff => "nouveau-off",
            StepKind::CudaKeyring => "cuda-keyring",
            StepKind::AptUpdate => "apt-update",
            StepKind::DriverPrerequisites => "driver-prerequisites",
            StepKind::Driver => "driver",
            StepKind::EnrollKey => "enroll-key",
            StepKind::LoadDriver => "load-driver",
            StepKind::Reboot => "reboot",
            StepKind::CudaToolkit => "cuda-toolkit",
            StepKind::CudaEnvironment => "cuda-environment",
            StepKind::Cudnn => "cudnn",
            StepKind::Nccl => "nccl",
            StepKind::CondaEnv => "conda-env",
            StepKind::CondaCuda => "conda-cuda",
            StepKind::PythonPackages => "python-packages",
            StepKind::Venv => "venv",
            StepKind::Framework(name) => name.as_str(),
            StepKind::ReinstallTorch { of: 1, .. } => "reinstall-torch",
            StepKind::ReinstallTorch { nth, .. } => {
                return Cow::Owned(format!("reinstall-torch-{}", nth + 1));
            }
            StepKind::AmdgpuInstall => "amdgpu-install",
            StepKind::Rocm => "rocm",
            StepKind::Groups => "groups",
            StepKind::HsaOverride => "hsa-override",
            StepKind::Verify => "verify",
        })
    }
}

impl fmt::Display for StepKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id())
    }
}

/// What a step is there for. Printed in the script's `Serves:` line and `plan --json`'s
/// `serves` as the finding's id or `request: ...`, so nobody has to guess why a step changes
/// the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Serves {
    /// A finding the step fixes.
    Finding(&'static Kind),
    /// What was asked, as the flags that ask it (`--framework torch`).
    Request(String),
    /// Nothing was named and nothing needs a fix: the newest stable stack.
    NewestStack,
    /// The last check serves whatever the steps before it serve.
    StepsAbove,
}

impl fmt::Display for Serves {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Serves::Finding(kind) => f.write_str(kind.id),
            Serves::Request(flags) => write!(f, "request: {flags}"),
            Serves::NewestStack => {
                f.write_str("request: the newest stable stack (nothing named, nothing to fix)")
            }
            Serves::StepsAbove => f.write_str("every step above"),
        }
    }
}

impl Serialize for Serves {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// One step of a plan: what it does, why, how a run knows it is already done, and whether it
/// needs root or a reboot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub kind: StepKind,
    /// One line.
    pub title: String,
    /// Why the step is there, with the source of its facts.
    pub why: String,
    /// Checked in order before the commands: the first that holds skips or stops the step.
    pub guards: Vec<Guard>,
    pub commands: Vec<Command>,
    pub needs_root: bool,
    /// The machine must reboot before the change takes effect.
    pub reboot: bool,
    /// What the step is there for: the findings it fixes, or the request. Filled by the
    /// planner from its decision once every step is there.
    pub serves: Vec<Serves>,
}

impl Step {
    /// The step's stable identifier ([`StepKind::id`]).
    #[must_use]
    pub fn id(&self) -> Cow<'static, str> {
        self.kind.id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::ids;

    #[test]
    fn ids_are_the_names_plans_have_always_printed() {
        assert_eq!(StepKind::CudaKeyring.id(), "cuda-keyring");
        assert_eq!(StepKind::Framework(FrameworkName::Jax).id(), "jax");
        assert_eq!(
            StepKind::ReinstallTorch { nth: 0, of: 1 }.id(),
            "reinstall-torch"
        );
        assert_eq!(
            StepKind::ReinstallTorch { nth: 1, of: 2 }.id(),
            "reinstall-torch-2"
        );
    }

    #[test]
    fn serves_prints_finding_ids_and_requests() {
        let all = [
            Serves::Finding(&ids::NO_DRIVER),
            Serves::Request("--framework torch".to_string()),
            Serves::StepsAbove,
        ];
        let text: Vec<String> = all.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "no-driver",
                "request: --framework torch",
                "every step above"
            ]
        );
        assert_eq!(
            serde_json::to_string(&all[1]).unwrap(),
            "\"request: --framework torch\""
        );
    }
}

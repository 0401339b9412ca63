//! Plans for machines whose GPUs are AMD: ROCm from AMD's repository through `amdgpu-install`
//! (a release whose official list has the GPU's gfx target), the `render` and `video` groups,
//! and PyTorch from the ROCm index whose wheels carry the target. A GPU no ROCm can drive is a
//! refusal with the reason. Every package name, URL and release comes from `rocm.toml`
//! (`amdgpu_install`, `release`, `torch_targets`, `override_group`, `install`) and
//! `frameworks.toml` (the torch releases and their ROCm variants). Pure.
//!
//! Least change: a ROCm that already lists the GPU is kept; a working amdgpu driver is kept
//! (`--no-dkms`); a torch build that already carries the GPU's target is left alone.
//!
//! The choices come first, then the steps: `decide.rs` (what is refused, the gfx targets, the
//! ROCm release), `torch.rs` (the wheel and its environment), then `draft.rs` writes the plan
//! in order from the step builders of `steps.rs` and `groups.rs`. A step both planners write
//! (the repository's setup package, `apt-get update`, `apt-get install`) is built in
//! `plan/common.rs`.

use crate::diagnose::ids::{self, Kind};
use crate::manifest::{AmdgpuInstall, Manifests, TorchWheel};
use crate::report::Report;
use crate::report::rocm::RocmStack;
use crate::version::Version;

use super::{Plan, Refusal, Step, Target, Via};

mod decide;
mod draft;
mod groups;
mod steps;
#[cfg(test)]
mod tests;
mod torch;

use decide::{
    choose_rocm, codename, gfx_targets, machine, refuse_nvidia_only, sibling_release,
    supported_by_release,
};
use groups::groups_step;
use steps::{installer_step, override_step, rocm_step, torch_step, verify_step};
use torch::choose_torch;

/// Whether the machine's GPUs are AMD: the plan is then ROCm's, not CUDA's.
#[must_use]
pub(super) fn applies(report: &Report) -> bool {
    report.nvidia_gpus().next().is_none()
        && (report.amd_gpus().next().is_some() || crate::diagnose::amd_gpu_evidence(report))
}

/// Where the override for every login is written.
const OVERRIDE_FILE: &str = "/etc/profile.d/gpu-doctor-hsa-override.sh";

/// Findings about a torch that cannot run on the AMD GPU.
const TORCH_FINDINGS: [&Kind; 3] = [
    &ids::CUDA_BUILD_ON_AMD_GPU,
    &ids::CPU_ONLY_FRAMEWORK_BUILD,
    &ids::ARCH_NOT_IN_BUILD,
];

/// The findings an AMD plan can fix; with none of them and nothing named, a plan installs the
/// newest ROCm for the GPU (or keeps one that lists it).
const FIXABLE: [&Kind; 5] = [
    &ids::ROCM_TOO_OLD_FOR_GPU,
    &ids::ROCM_DEVICE_PERMISSION,
    &ids::CUDA_BUILD_ON_AMD_GPU,
    &ids::CPU_ONLY_FRAMEWORK_BUILD,
    &ids::ARCH_NOT_IN_BUILD,
];

/// The ROCm release a plan installs, and how.
struct RocmChoice<'m> {
    installer: &'m AmdgpuInstall,
    /// The Ubuntu release (`noble`) the installer package is for.
    codename: String,
    usecase: String,
    no_dkms: bool,
}

/// What the plan does for torch: where, which wheel (none: the build here stays), replacing
/// what.
struct TorchChoice {
    env: String,
    python: String,
    wheel: Option<TorchWheel>,
    /// The build that is there now (`2.1.1+cu121`), uninstalled first.
    replaces: Option<String>,
    /// The `nvidia-*` wheels a CUDA build brought, uninstalled with it.
    cuda_wheels: Vec<String>,
    /// `HSA_OVERRIDE_GFX_VERSION` to export when the wheel carries only a sibling target.
    override_value: Option<(String, String)>,
}

/// Makes the ROCm plan, or refuses with the reason and the machine's facts.
///
/// # Errors
/// A [`Refusal`] when the target cannot work on these GPUs or this system.
pub(super) fn plan(report: &Report, m: &Manifests, target: &Target) -> Result<Plan, Refusal> {
    let machine = machine(report, m);
    match Choices::make(report, m, target) {
        Ok(choices) => Ok(choices.plan(machine)),
        Err(reason) => Err(Refusal {
            reason,
            facts: super::machine_facts(&machine),
        }),
    }
}

/// What an AMD plan is written from, decided before any step: the GPUs' targets, the ROCm
/// there and the one to install, and the torch to install or keep.
struct Choices<'a, 'm> {
    report: &'a Report,
    m: &'m Manifests,
    target: &'a Target,
    /// The gfx targets of the GPUs ROCm programs run on, deduplicated.
    targets: Vec<String>,
    /// The version of the default ROCm install (`/opt/rocm`), when there is one.
    installed: Option<String>,
    rocm: Option<RocmChoice<'m>>,
    torch: Option<TorchChoice>,
}

/// An AMD plan's parts as they are written, each list in the order it prints.
#[derive(Default)]
struct Draft {
    steps: Vec<Step>,
    summary: Vec<String>,
    notes: Vec<String>,
    /// The findings the steps fix (when the report has them).
    fixes: Vec<&'static Kind>,
}

impl<'a, 'm> Choices<'a, 'm> {
    /// The choices, or why none can be made: the target must be one an AMD plan serves, every
    /// GPU must have a target some ROCm runs, and `--via pip` must have a torch to install.
    fn make(report: &'a Report, m: &'m Manifests, target: &'a Target) -> Result<Self, String> {
        let via = target.via();
        refuse_nvidia_only(target, via)?;
        let targets = gfx_targets(report, m)?;
        let installed = report
            .rocm
            .as_ref()
            .and_then(RocmStack::opt_rocm_install)
            .and_then(|i| i.version.clone());
        let mut choices = Choices {
            report,
            m,
            target,
            targets,
            installed,
            rocm: None,
            torch: None,
        };
        choices.rocm = choices.rocm_to_install(via)?;
        choices.torch = choose_torch(report, m, target, &choices.targets)?;
        if via == Via::Pip && choices.torch.is_none() {
            return Err(
                "--via pip installs PyTorch's ROCm wheel, and nothing asks for it: name it with \
                 --framework torch, or plan ROCm itself with --via apt"
                    .to_string(),
            );
        }
        Ok(choices)
    }

    /// Whether the report has this finding.
    fn found(&self, kind: &Kind) -> bool {
        self.report.findings.iter().any(|f| f.id == kind.id)
    }

    /// Whether a ROCm release's official list has every GPU's target (or its sibling).
    fn lists_all(&self, rocm: &str) -> bool {
        self.targets
            .iter()
            .all(|t| supported_by_release(self.m, rocm, t).is_some())
    }

    /// What to do about ROCm itself: install or upgrade it when asked (--via apt), when the
    /// installed one does not list the GPU, or when nothing is named and nothing is to be fixed
    /// (the newest stack, as for NVIDIA); else keep what is there (PyTorch's ROCm wheels bring
    /// their own runtime).
    fn rocm_to_install(&self, via: Via) -> Result<Option<RocmChoice<'m>>, String> {
        let nothing_to_fix = !FIXABLE.iter().any(|kind| self.found(kind));
        // A program that brings its own ROCm (ollama's lib/ollama/rocm), or TheRock's ROCm
        // wheels in a Python environment, runs without one in /opt: with nothing to fix and
        // nothing named, that machine needs no install.
        let own_rocm_only = self.installed.is_none()
            && (self
                .report
                .rocm
                .as_ref()
                .is_some_and(|s| !s.bundled.is_empty())
                || self
                    .report
                    .python_envs
                    .iter()
                    .any(|e| !e.rocm_wheels.is_empty()));
        let wants_rocm = self.target.via == Some(Via::Apt)
            || self.found(&ids::ROCM_TOO_OLD_FOR_GPU)
            || (!self.target.names_a_stack() && nothing_to_fix && !own_rocm_only);
        match via {
            Via::Apt if self.installed.as_deref().is_some_and(|v| self.lists_all(v)) => Ok(None),
            Via::Apt if wants_rocm => {
                let codename = codename(self.report, self.target)?;
                let choice = choose_rocm(self.report, self.m, codename, &self.targets)?;
                // Nothing to fix and nothing asked: a ROCm newer than every release the table
                // holds (7.2.3 where its newest installer is 7.1.1) is kept, never taken back.
                let newer = |installed: &String| {
                    Version::parse(installed) > Version::parse(&choice.installer.rocm)
                };
                let keep = nothing_to_fix
                    && self.target.via.is_none()
                    && !self.found(&ids::ROCM_TOO_OLD_FOR_GPU)
                    && self.installed.as_ref().is_some_and(newer);
                Ok((!keep).then_some(choice))
            }
            _ => Ok(None),
        }
    }
}

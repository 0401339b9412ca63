//! Writing an AMD plan from its choices: the steps in order, the summary and notes, what each
//! step serves, and what the plan fixes and leaves alone.

use crate::diagnose::ids::{self, Kind};
use crate::report::{EnvKind, Report};

use super::{
    Choices, Draft, RocmChoice, TORCH_FINDINGS, TorchChoice, groups_step, installer_step,
    override_step, rocm_step, sibling_release, torch_step, verify_step,
};
use crate::plan::{Machine, Plan, Serves, StepKind};

impl Choices<'_, '_> {
    /// The plan: ROCm, the groups, torch and the override, in that order (each needs the one
    /// before), the check that runs them all, then what each step is there for.
    pub(super) fn plan(self, machine: Machine) -> Plan {
        let mut draft = Draft::default();
        self.write_rocm(&mut draft);
        self.write_groups(&mut draft);
        self.write_torch(&mut draft);
        self.write_override(&mut draft);
        // Nothing changes, nothing to verify: a healthy machine gets no step.
        if draft.steps.is_empty() {
            draft.notes.push(
                "Nothing to fix: this plan changes nothing. `gpu-doctor plan --framework torch` \
                 plans a ROCm torch, `--via apt` the newest ROCm for these GPUs."
                    .to_string(),
            );
        } else {
            draft.steps.push(verify_step(
                self.rocm.is_some() || self.installed.is_some(),
                self.torch.as_ref(),
            ));
        }
        self.write_cautions(&mut draft);
        let request = self
            .target
            .names_a_stack()
            .then(|| crate::plan::shell::flags(self.target));
        for step in &mut draft.steps {
            step.serves = serves(step.kind, &draft.fixes, request.as_deref(), |kind| {
                self.found(kind)
            });
        }
        let (addresses, leaves) = crate::plan::findings(&machine, &draft.fixes);
        Plan {
            tool_version: env!("CARGO_PKG_VERSION").to_string(),
            untouched: untouched(self.report, self.rocm.as_ref(), self.torch.as_ref()),
            summary: draft.summary,
            notes: draft.notes,
            addresses,
            leaves,
            machine,
            target: self.target.clone(),
            steps: draft.steps,
            files: Vec::new(),
            options: Vec::new(),
            apt_repos: self.apt_repos(),
            effects: Vec::new(),
        }
    }

    /// AMD's installer and ROCm through it, upgrading the ROCm there; or, with none to
    /// install, the ROCm that stays.
    fn write_rocm(&self, out: &mut Draft) {
        let Some(choice) = &self.rocm else {
            if let Some(v) = self.installed.as_deref() {
                out.summary.push(format!(
                    "ROCm: keep {v} in /opt/rocm{}",
                    if self.lists_all(v) {
                        format!(" (its list has {})", self.targets.join(", "))
                    } else {
                        String::new()
                    }
                ));
            }
            return;
        };
        out.steps.push(installer_step(choice));
        out.steps.push(rocm_step(self.m, choice));
        out.summary.push(format!(
            "via apt: amdgpu-install {} from repo.radeon.com for Ubuntu {}",
            choice.installer.rocm, choice.codename
        ));
        out.summary.push(format!(
            "ROCm {} (amdgpu-install --usecase={}{})",
            choice.installer.rocm,
            choice.usecase,
            if choice.no_dkms {
                " --no-dkms: the working amdgpu driver stays"
            } else {
                ": with AMD's amdgpu-dkms kernel driver"
            }
        ));
        if let Some(v) = self.installed.as_deref() {
            out.summary.push(format!(
                "ROCm {v} in /opt/rocm: apt upgrades its packages to {} (a multi-version \
                 install's versioned packages stay beside it)",
                choice.installer.rocm
            ));
        }
        out.fixes.push(&ids::ROCM_TOO_OLD_FOR_GPU);
    }

    /// The `render` and `video` groups, when the user lacks them.
    fn write_groups(&self, out: &mut Draft) {
        if let Some(step) = groups_step(self.report, self.m) {
            out.steps.push(step);
            out.summary.push(format!(
                "groups {} for the user (opening /dev/kfd and the render nodes)",
                self.m.rocm.install.groups.join(", ")
            ));
            out.fixes.push(&ids::ROCM_DEVICE_PERMISSION);
        }
    }

    /// The torch wheel (into a new venv when the environment is not one yet), or the ROCm
    /// build that stays.
    fn write_torch(&self, out: &mut Draft) {
        let Some(t) = &self.torch else {
            return;
        };
        if let Some(wheel) = &t.wheel {
            if !self
                .report
                .python_envs
                .iter()
                .any(|e| e.path == t.env && e.kind == EnvKind::Venv)
                && t.replaces.is_none()
            {
                out.steps.push(crate::plan::python::venv(&t.env, &t.python));
            }
            out.steps.push(torch_step(self.m, t, wheel));
            out.summary.push(format!(
                "torch: pip install torch=={} from {} into {}",
                wheel.release,
                self.m.frameworks.torch_index_url(&wheel.variant),
                t.env
            ));
            out.fixes.extend(TORCH_FINDINGS);
        } else {
            out.summary.push(format!(
                "torch: keep the ROCm build in {} (it carries {})",
                t.env,
                if t.override_value.is_some() {
                    "the GPU's override sibling"
                } else {
                    "the GPU's target"
                }
            ));
            if t.override_value.is_some() {
                out.fixes.push(&ids::ARCH_NOT_IN_BUILD);
            }
        }
    }

    /// The sibling override, when the GPU runs only as its sibling (the wheel's list, else
    /// ROCm's): exported for every login, unless it is set already; with GPUs of different
    /// targets, a note instead, since one override would give the others the wrong code.
    fn write_override(&self, out: &mut Draft) {
        let targets = &self.targets;
        let override_value = self
            .torch
            .as_ref()
            .and_then(|t| t.override_value.clone())
            .or_else(|| {
                let choice = self.rocm.as_ref()?;
                targets
                    .iter()
                    .find_map(|gfx| sibling_release(self.m, &choice.installer.rocm, gfx))
                    .map(|(family, value)| (value, family))
            });
        let Some((value, family)) = &override_value else {
            return;
        };
        let mixed = targets.iter().any(|t| Some(t) != targets.first());
        let set = crate::diagnose::env_var(self.report, "HSA_OVERRIDE_GFX_VERSION")
            .is_some_and(|v| v.trim() == value);
        if mixed {
            out.notes.push(format!(
                "These GPUs have different targets ({}): one HSA_OVERRIDE_GFX_VERSION={value} \
                 would make the runtime load the wrong code on the others; run the programs with \
                 HIP_VISIBLE_DEVICES naming the GPUs of one target and the override.",
                targets.join(", ")
            ));
        } else if !set {
            out.steps.push(override_step(value, family));
            out.summary.push(format!(
                "HSA_OVERRIDE_GFX_VERSION={value}: the GPU runs as its {family} sibling"
            ));
        }
    }

    /// What the plan cannot do from inside: a container's devices come from its host, and
    /// amdgpu-dkms under Secure Boot needs its key enrolled.
    fn write_cautions(&self, out: &mut Draft) {
        if let Some(c) = self.report.host.container.as_deref()
            && self.found(&ids::KFD_MISSING)
        {
            out.notes.push(format!(
                "This is a {c} container: the amdgpu kernel driver is the host's. Start the \
                 container with --device=/dev/kfd --device=/dev/dri --group-add video \
                 --group-add render."
            ));
        }
        if self.rocm.as_ref().is_some_and(|c| !c.no_dkms)
            && self.report.host.secure_boot != Some(false)
        {
            out.notes.push(
                "amdgpu-dkms builds its kernel module on this machine: with Secure Boot on, its \
                 signing key must be enrolled as a Machine-Owner Key after the reboot ('Enroll \
                 MOK'), or the module is rejected."
                    .to_string(),
            );
        }
    }

    /// The repositories (repos.toml ids) the apt lines are for: those serving the Ubuntu
    /// release the installer is for; none without an apt install.
    fn apt_repos(&self) -> Vec<String> {
        self.rocm
            .as_ref()
            .map(|choice| {
                let os = if choice.codename == "jammy" {
                    "ubuntu-22.04"
                } else {
                    "ubuntu-24.04"
                };
                self.m
                    .repos
                    .serving("ubuntu", os, "x86_64")
                    .map(|r| r.id.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// What a step of an AMD plan is there for: the findings it fixes that the report has, else
/// the request (or the newest stack, when nothing was named).
pub(super) fn serves(
    kind: StepKind,
    fixes: &[&Kind],
    request: Option<&str>,
    found: impl Fn(&Kind) -> bool,
) -> Vec<Serves> {
    let ours: &[&'static Kind] = match kind {
        StepKind::AmdgpuInstall | StepKind::Rocm => &[
            &ids::ROCM_TOO_OLD_FOR_GPU,
            &ids::KFD_MISSING,
            &ids::AMDGPU_NOT_LOADED,
            &ids::AMDGPU_NOT_BOUND,
        ],
        StepKind::Groups => &[&ids::ROCM_DEVICE_PERMISSION],
        StepKind::Venv | StepKind::Framework(_) => &TORCH_FINDINGS,
        // The override is what lets a new or kept build run on the GPU: it serves the same.
        StepKind::HsaOverride => &[
            &ids::ARCH_NOT_IN_BUILD,
            &ids::HSA_OVERRIDE_MISMATCH,
            &ids::CUDA_BUILD_ON_AMD_GPU,
            &ids::CPU_ONLY_FRAMEWORK_BUILD,
        ],
        StepKind::Verify => return vec![Serves::StepsAbove],
        // NVIDIA's steps: an AMD plan has none of them.
        StepKind::NouveauOff
        | StepKind::CudaKeyring
        | StepKind::AptUpdate
        | StepKind::DriverPrerequisites
        | StepKind::Driver
        | StepKind::EnrollKey
        | StepKind::LoadDriver
        | StepKind::Reboot
        | StepKind::CudaToolkit
        | StepKind::CudaEnvironment
        | StepKind::Cudnn
        | StepKind::Nccl
        | StepKind::CondaEnv
        | StepKind::CondaCuda
        | StepKind::PythonPackages
        | StepKind::ReinstallTorch { .. } => &[],
    };
    let mut out: Vec<Serves> = ours
        .iter()
        .filter(|k| fixes.contains(k) && found(k))
        .map(|k| Serves::Finding(k))
        .collect();
    if out.is_empty() {
        out.push(request.map_or(Serves::NewestStack, |flags| {
            Serves::Request(flags.to_string())
        }));
    }
    out
}

/// What the plan leaves as it is.
pub(super) fn untouched(
    report: &Report,
    rocm: Option<&RocmChoice<'_>>,
    torch: Option<&TorchChoice>,
) -> Vec<String> {
    let mut out = Vec::new();
    if rocm.is_none_or(|c| c.no_dkms) {
        out.push("the amdgpu kernel driver".to_string());
    }
    if let Some(stack) = &report.rocm {
        for i in &stack.installs {
            // The install /opt/rocm points at is the one amdgpu-install upgrades.
            if rocm.is_some() && stack.default_install.as_deref() == Some(i.path.as_str()) {
                continue;
            }
            out.push(format!(
                "the ROCm in {}{}",
                i.path,
                i.version
                    .as_deref()
                    .map(|v| format!(" ({v})"))
                    .unwrap_or_default(),
            ));
        }
    }
    let mut envs: Vec<&str> = report
        .python_envs
        .iter()
        .filter(|e| !e.frameworks.is_empty())
        .map(|e| e.path.as_str())
        .collect();
    envs.dedup();
    for env in envs {
        if torch.is_none_or(|t| t.wheel.is_none() || t.env != env) {
            out.push(format!("the Python environment {env}"));
        }
    }
    out.push("firmware, BIOS and Secure Boot settings".to_string());
    out
}

//! Plans for machines whose GPUs are AMD: ROCm from AMD's repository through `amdgpu-install`
//! (a release whose official list has the GPU's gfx target), the `render` and `video` groups,
//! and PyTorch from the ROCm index whose wheels carry the target. A GPU no ROCm can drive is a
//! refusal with the reason. Every package name, URL and release comes from `rocm.toml`
//! (`amdgpu_install`, `release`, `torch_targets`, `override_group`, `install`) and
//! `frameworks.toml` (the torch releases and their ROCm variants). Pure.
//!
//! Least change: a ROCm that already lists the GPU is kept; a working amdgpu driver is kept
//! (`--no-dkms`); a torch build that already carries the GPU's target is left alone.

use crate::framework::FrameworkName;
use crate::manifest::{AmdgpuInstall, Manifests, TargetCarried, TorchWheel};
use crate::report::{EnvKind, Framework, Gpu, PythonEnv, Report};
use crate::version::GfxTarget;

use super::cmd::{Check, Command, Guard, Python, Word, words};
use super::machine::GpuFact;
use super::{FindingNote, Machine, Plan, Refusal, Step, Target, Via};

/// Whether the machine's GPUs are AMD: the plan is then ROCm's, not CUDA's.
#[must_use]
pub(super) fn applies(report: &Report) -> bool {
    report.nvidia_gpus().next().is_none()
        && (report.amd_gpus().next().is_some() || crate::diagnose::amd_gpu_evidence(report))
}

/// The findings an AMD plan can fix; with none of them and nothing named, a plan installs the
/// newest ROCm for the GPU (or keeps one that lists it).
/// Where the override for every login is written.
const OVERRIDE_FILE: &str = "/etc/profile.d/gpu-doctor-hsa-override.sh";

/// Findings about a torch that cannot run on the AMD GPU.
const TORCH_FINDINGS: [&str; 3] = [
    "cuda-build-on-amd-gpu",
    "cpu-only-framework-build",
    "arch-not-in-build",
];

const FIXABLE: [&str; 5] = [
    "rocm-too-old-for-gpu",
    "rocm-device-permission",
    "cuda-build-on-amd-gpu",
    "cpu-only-framework-build",
    "arch-not-in-build",
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
    fixes: Vec<&'static str>,
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
            .and_then(|s| {
                s.default_install
                    .as_deref()
                    .and_then(|d| s.installs.iter().find(|i| i.path == d))
            })
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
    fn found(&self, id: &str) -> bool {
        self.report.findings.iter().any(|f| f.id == id)
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
        let nothing_to_fix = !FIXABLE.iter().any(|id| self.found(id));
        let wants_rocm = self.target.via == Some(Via::Apt)
            || self.found("rocm-too-old-for-gpu")
            || (!self.target.names_a_stack() && nothing_to_fix);
        match via {
            Via::Apt if self.installed.as_deref().is_some_and(|v| self.lists_all(v)) => Ok(None),
            Via::Apt if wants_rocm => {
                let codename = codename(self.report, self.target)?;
                choose_rocm(self.report, self.m, codename, &self.targets).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// The plan: ROCm, the groups, torch and the override, in that order (each needs the one
    /// before), the check that runs them all, then what each step is there for.
    fn plan(self, machine: Machine) -> Plan {
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
            .then(|| format!("request: {}", super::shell::flags(self.target)));
        for step in &mut draft.steps {
            step.serves = serves(&step.id, &draft.fixes, request.as_deref(), |id| {
                self.found(id)
            });
        }
        let (addresses, leaves) = findings(&machine, &draft.fixes);
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
        out.fixes.push("rocm-too-old-for-gpu");
    }

    /// The `render` and `video` groups, when the user lacks them.
    fn write_groups(&self, out: &mut Draft) {
        if let Some(step) = groups_step(self.report, self.m) {
            out.steps.push(step);
            out.summary.push(format!(
                "groups {} for the user (opening /dev/kfd and the render nodes)",
                self.m.rocm.install.groups.join(", ")
            ));
            out.fixes.push("rocm-device-permission");
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
                out.steps.push(super::python::venv(&t.env, &t.python));
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
                out.fixes.push("arch-not-in-build");
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
            && self.found("kfd-missing")
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

/// `--cuda`, `--cudnn`, `--driver R`, `--via conda` and frameworks other than PyTorch are for
/// NVIDIA's stack (or have no ROCm data in the tables): refused with what to ask instead.
fn refuse_nvidia_only(target: &Target, via: Via) -> Result<(), String> {
    if target.cuda.is_some()
        || target.cudnn.is_some()
        || matches!(target.driver, super::DriverChoice::Branch(_))
    {
        return Err(
            "--cuda, --cudnn and --driver choose NVIDIA's CUDA stack, and this machine's GPUs are \
             AMD: plan ROCm without them (`gpu-doctor plan`, `gpu-doctor plan --framework torch`)"
                .to_string(),
        );
    }
    if via == Via::Conda {
        return Err(
            "conda plans are made for NVIDIA's CUDA stack: PyTorch's ROCm builds come from its pip \
             index; use --via pip (the wheel only) or --via apt (ROCm and the wheel)"
                .to_string(),
        );
    }
    if let Some(fw) = &target.framework
        && fw.name != super::FrameworkName::Torch
    {
        return Err(format!(
            "gpu-doctor's tables hold ROCm wheel data for PyTorch only; {}'s ROCm builds are not \
             planned (rocm.toml gaps)",
            fw.name.as_str()
        ));
    }
    Ok(())
}

/// The gfx targets of the GPUs ROCm programs run on, deduplicated; none (WSL, or only signs of
/// an AMD GPU) or one no ROCm runs is a refusal with the reason.
fn gfx_targets(report: &Report, m: &Manifests) -> Result<Vec<String>, String> {
    let gpus = target_gpus(report);
    if gpus.is_empty() {
        return Err(if report.host.wsl {
            format!(
                "under WSL the AMD GPU is reached through the Windows driver, and its gfx target \
                 cannot be read here, so no ROCm release or wheel can be chosen for it: follow \
                 AMD's ROCm-on-WSL guide (the Windows Adrenalin driver it names, then \
                 `amdgpu-install -y --usecase={} --no-dkms` from a ROCm release whose WSL \
                 support matrix lists the GPU)",
                m.rocm.install.usecase_wsl
            )
        } else {
            "no AMD GPU is on the PCI bus of this machine (only signs of one: the amdgpu \
             module, /dev/kfd or a ROCm install), so no ROCm release can be chosen for it"
                .to_string()
        });
    }
    for g in &gpus {
        if let Some(why) = unsupported(m, g) {
            return Err(why);
        }
    }
    let mut targets: Vec<String> = gpus.iter().filter_map(|g| g.gfx_target.clone()).collect();
    targets.dedup();
    Ok(targets)
}

/// What a step of an AMD plan is there for: the findings it fixes that the report has, else
/// the request (or the newest stack, when nothing was named).
fn serves(
    id: &str,
    fixes: &[&str],
    request: Option<&str>,
    found: impl Fn(&str) -> bool,
) -> Vec<String> {
    let ours: &[&str] = match id {
        "amdgpu-install" | "rocm" => &["rocm-too-old-for-gpu", "kfd-missing", "amdgpu-not-loaded"],
        "groups" => &["rocm-device-permission"],
        "venv" | "torch" => &TORCH_FINDINGS,
        // The override is what lets a new or kept build run on the GPU: it serves the same.
        "hsa-override" => &[
            "arch-not-in-build",
            "hsa-override-mismatch",
            "cuda-build-on-amd-gpu",
            "cpu-only-framework-build",
        ],
        "verify" => return vec!["every step above".to_string()],
        _ => &[],
    };
    let mut out: Vec<String> = ours
        .iter()
        .filter(|f| fixes.contains(f) && found(f))
        .map(|f| (*f).to_string())
        .collect();
    if out.is_empty() {
        out.push(request.map_or_else(
            || "request: the newest stable stack (nothing named, nothing to fix)".to_string(),
            str::to_string,
        ));
    }
    out
}

/// The plan's view of the machine: its AMD GPUs with their targets, the driver in words.
fn machine(report: &Report, m: &Manifests) -> Machine {
    let mut machine = Machine::from_report(report, m);
    machine.gpus = report
        .amd_gpus()
        .map(|g| GpuFact {
            index: g.index,
            name: g.name.clone(),
            compute_capability: None,
            architecture: g.architecture.clone(),
            pci_device_id: g.pci_device_id.clone(),
            gfx_target: Some(
                g.gfx_target
                    .clone()
                    .unwrap_or_else(|| "gfx unknown".to_string()),
            ),
            first_driver: None,
            identity_note: g.identity_note.clone(),
        })
        .collect();
    let module = report.rocm.as_ref().map_or("amdgpu", |s| {
        if report.host.wsl {
            return "the Windows driver (WSL)";
        }
        match (s.amdgpu.loaded, s.amdgpu.kind.as_deref()) {
            (false, _) => "amdgpu not loaded",
            (true, Some("dkms")) => "amdgpu-dkms",
            _ => "amdgpu (the kernel's own)",
        }
    });
    machine.amd_driver = Some(match &report.kernel.rocm_version {
        Some(v) => format!("{module}, ROCm {v} in /opt/rocm"),
        None => format!("{module}, no ROCm installed"),
    });
    machine
}

/// The GPUs ROCm programs would run on: an APU's iGPU beside a discrete GPU is left out (it is
/// hidden with HIP_VISIBLE_DEVICES, not planned for).
fn target_gpus(report: &Report) -> Vec<&Gpu> {
    let all: Vec<&Gpu> = report.amd_gpus().collect();
    let discrete = all.iter().any(|g| g.integrated == Some(false));
    all.into_iter()
        .filter(|g| !(discrete && g.integrated == Some(true)))
        .collect()
}

/// Why no ROCm can run on a GPU, when none can.
fn unsupported(m: &Manifests, g: &Gpu) -> Option<String> {
    let name = g.name.as_deref().unwrap_or("AMD GPU");
    let Some(gfx) = g.gfx_target.as_deref() else {
        return Some(format!(
            "the gfx target of GPU {} ({name}, {}) is not known, so no ROCm release or wheel can be \
             chosen for it: with amdgpu loaded, `rocminfo | grep gfx` names it",
            g.index,
            g.pci_device_id.as_deref().unwrap_or("no PCI id")
        ));
    };
    let target = m.amd_gpu_ids.table().target(gfx);
    if let Some(t) = target.filter(|t| t.kfd == "no") {
        return Some(format!(
            "no ROCm release runs on GPU {} ({name}, {gfx}, {}): the kernel's KFD, through which \
             ROCm reaches a GPU, does not drive it; use a Vulkan or OpenCL backend, or another GPU",
            g.index, t.family
        ));
    }
    if GfxTarget::parse(gfx).is_some_and(|t| t.major <= 8) {
        return Some(format!(
            "no ROCm release runs on GPU {} ({name}, {gfx}): ROCm dropped gfx8 and older in 4.0 \
             (rocm.toml no_override); use a Vulkan or OpenCL backend, or another GPU",
            g.index
        ));
    }
    None
}

/// Ubuntu's code name from `--os` or the machine.
fn codename(report: &Report, target: &Target) -> Result<String, String> {
    let wanted = match &target.os {
        Some(os) => os.clone(),
        None => format!(
            "{}-{}",
            report.host.os_id.as_deref().unwrap_or("unknown"),
            report.host.os_version.as_deref().unwrap_or("")
        ),
    };
    match wanted.as_str() {
        "ubuntu-22.04" => Ok("jammy".to_string()),
        "ubuntu-24.04" => Ok("noble".to_string()),
        other => Err(format!(
            "AMD plans are written for Ubuntu 22.04 and 24.04 (the amdgpu-install packages of \
             rocm.toml), and this is {other}: pass --os ubuntu-22.04 or --os ubuntu-24.04, or \
             install ROCm as AMD documents it for your distribution"
        )),
    }
}

/// `Some(())` when a ROCm release lists the target itself, or its sibling through the
/// maintainers' override.
fn supported_by_release(m: &Manifests, rocm: &str, gfx: &str) -> Option<()> {
    let release = m.rocm.release(rocm)?;
    if release.targets.iter().any(|t| t == gfx) {
        return Some(());
    }
    sibling_release(m, rocm, gfx).map(|_| ())
}

/// `(family, value)` when the release lists only the target's override sibling.
fn sibling_release(m: &Manifests, rocm: &str, gfx: &str) -> Option<(String, String)> {
    let release = m.rocm.release(rocm)?;
    if release.targets.iter().any(|t| t == gfx) {
        return None;
    }
    let group = m.rocm.override_group(gfx)?;
    let sibling = GfxTarget::from_override(&group.value)?.to_string();
    release
        .targets
        .contains(&sibling)
        .then(|| (group.family.clone(), group.value.clone()))
}

/// The newest ROCm with an installer for this Ubuntu whose list has every target (or its
/// sibling); how to run it: the use case for the GPU kind, and `--no-dkms` while a working
/// amdgpu driver (with /dev/kfd) is there.
fn choose_rocm<'m>(
    report: &Report,
    m: &'m Manifests,
    codename: String,
    targets: &[String],
) -> Result<RocmChoice<'m>, String> {
    let installer = m
        .rocm
        .installers
        .iter()
        .rev()
        .filter(|i| i.codenames.contains(&codename))
        .find(|i| {
            targets
                .iter()
                .all(|t| supported_by_release(m, &i.rocm, t).is_some())
        })
        .ok_or_else(|| {
            let reasons: Vec<String> = targets
                .iter()
                .map(|t| match m.rocm.no_override(t) {
                    Some(n) => format!(
                        "{t} is in the official list of no ROCm release rocm.toml holds, and \
                         HSA_OVERRIDE_GFX_VERSION is no way round it: {}",
                        n.reason
                    ),
                    None => format!(
                        "{t} is in the official list of no ROCm release rocm.toml holds, nor is \
                         a sibling of one"
                    ),
                })
                .collect();
            let pip = targets
                .iter()
                .all(|t| m.rocm.torch_wheel(&m.frameworks, None, t, None).is_some());
            format!(
                "no ROCm release with an amdgpu-install package for Ubuntu {codename} supports \
                 this GPU ({}){}",
                reasons.join("; "),
                if pip {
                    "; PyTorch's ROCm wheels bring their own runtime and carry it: --via pip \
                     --framework torch plans that alone"
                } else {
                    ""
                }
            )
        })?;
    // Instinct accelerators (class 0380) and containers compute only: no graphics use case.
    let compute_only = report.host.container.is_some()
        || report
            .pci_devices
            .iter()
            .any(|d| d.vendor == "amd" && d.class.starts_with("0x0380"));
    let usecase = if compute_only {
        m.rocm.install.usecase_instinct.clone()
    } else {
        m.rocm.install.usecase_radeon.clone()
    };
    let working =
        report.kernel.amdgpu_loaded && report.kernel.device_nodes.iter().any(|n| n == "/dev/kfd");
    Ok(RocmChoice {
        installer,
        codename,
        usecase,
        no_dkms: working || report.host.container.is_some(),
    })
}

/// PyTorch for the GPUs: asked for with `--framework torch[==V]`, or a torch here that a
/// finding says cannot run on the GPU (a CUDA or CPU build, or one without the target). A ROCm
/// build that carries the GPU's override sibling is kept: the override is the fix.
fn choose_torch(
    report: &Report,
    m: &Manifests,
    target: &Target,
    targets: &[String],
) -> Result<Option<TorchChoice>, String> {
    let broken: Vec<&str> = report
        .findings
        .iter()
        .filter(|f| TORCH_FINDINGS.contains(&f.id.as_str()))
        .flat_map(|f| f.subjects.iter())
        .filter_map(|s| s.strip_prefix("framework:")?.strip_suffix(":torch"))
        .collect();
    let asked = target.framework.as_ref();
    if asked.is_none() && broken.is_empty() {
        return Ok(None);
    }
    let env = torch_env(report, target, &broken);
    let here = report.python_envs.iter().find(|e| e.path == env);
    let gfx = targets.first().map(String::as_str).unwrap_or("");
    let ask = TorchAsk {
        m,
        target,
        here,
        existing: here.and_then(|e| e.frameworks.iter().find(|f| f.name == FrameworkName::Torch)),
        python_version: target
            .python
            .clone()
            .or_else(|| here.and_then(|e| e.python_version.clone())),
        wanted_version: asked.and_then(|f| f.version.clone()),
        gfx,
        group: m.rocm.override_group(gfx).and_then(|g| {
            let sibling = GfxTarget::from_override(&g.value)?.to_string();
            Some(OverrideSibling {
                target: sibling,
                value: g.value.clone(),
                family: g.family.clone(),
            })
        }),
        env,
    };
    if let Some(kept) = ask.kept() {
        return Ok(Some(kept));
    }
    ask.install().map(Some)
}

/// The environment torch goes into: `--env`, else the one a finding names, else the one venv
/// that has torch, else `.venv`.
fn torch_env(report: &Report, target: &Target, broken: &[&str]) -> String {
    target
        .env
        .clone()
        .or_else(|| broken.first().map(|e| (*e).to_string()))
        .or_else(|| {
            let torch_envs: Vec<&str> = report
                .python_envs
                .iter()
                .filter(|e| {
                    e.kind == EnvKind::Venv
                        && e.frameworks.iter().any(|f| f.name == FrameworkName::Torch)
                })
                .map(|e| e.path.as_str())
                .collect();
            (torch_envs.len() == 1).then(|| torch_envs[0].to_string())
        })
        .unwrap_or_else(|| ".venv".to_string())
}

/// A target's override sibling: the target ROCm's lists may carry in its place, and the
/// `HSA_OVERRIDE_GFX_VERSION` value (with the family's name) that makes the runtime use it.
struct OverrideSibling {
    target: String,
    value: String,
    family: String,
}

impl OverrideSibling {
    /// The override to export, `(value, family)`, as [`TorchChoice`] keeps it.
    fn exported(&self) -> (String, String) {
        (self.value.clone(), self.family.clone())
    }
}

/// What the torch choice depends on, once the environment is known.
struct TorchAsk<'a> {
    m: &'a Manifests,
    target: &'a Target,
    env: String,
    here: Option<&'a PythonEnv>,
    /// The torch in that environment now.
    existing: Option<&'a Framework>,
    /// `--python`, else the environment's: the wheel must install on it.
    python_version: Option<String>,
    /// The torch release asked for (`--framework torch==2.5`).
    wanted_version: Option<String>,
    /// The first GPU's gfx target.
    gfx: &'a str,
    group: Option<OverrideSibling>,
}

impl TorchAsk<'_> {
    /// A ROCm build here that carries the target, or its override sibling, stays when it is
    /// the version asked for (or none is).
    fn kept(&self) -> Option<TorchChoice> {
        let f = self
            .existing
            .filter(|f| f.variant.as_deref() == Some("rocm"))?;
        let wanted = self.wanted_version.as_deref().is_none_or(|v| {
            f.version
                .as_deref()
                .is_some_and(|have| same_release(have, v))
        });
        if !wanted {
            return None;
        }
        let carries = |t: &str| {
            f.gfx_targets.iter().any(|x| x == t)
                || (f.gfx_targets.is_empty()
                    && f.version.as_deref().is_some_and(|v| {
                        matches!(self.m.rocm.torch_carries(v, t), TargetCarried::Yes(_))
                    }))
        };
        let override_value = if carries(self.gfx) {
            None
        } else {
            let sibling = self.group.as_ref().filter(|g| carries(&g.target))?;
            Some(sibling.exported())
        };
        Some(TorchChoice {
            env: self.env.clone(),
            python: String::new(),
            wheel: None,
            replaces: None,
            cuda_wheels: Vec::new(),
            override_value,
        })
    }

    /// The wheel to install, replacing the torch here (and the `nvidia-*` wheels a CUDA build
    /// brought); a release asked for whose wheels do not carry the target is refused, naming
    /// the newest that does.
    fn install(self) -> Result<TorchChoice, String> {
        let (wheel, override_value) = self.wheel()?;
        if let Some(v) = &self.wanted_version
            && !same_release(&wheel.release, v)
        {
            return Err(format!(
                "torch {v}'s ROCm wheels do not carry {} (rocm.toml torch_targets); torch {} is \
                 the newest release whose wheels do",
                self.gfx,
                wheel.release.trim_end_matches(".*")
            ));
        }
        let existing = self.existing;
        Ok(TorchChoice {
            env: self.env,
            python: self
                .target
                .python
                .as_ref()
                .map_or_else(|| "python3".to_string(), |p| format!("python{p}")),
            wheel: Some(wheel),
            replaces: existing.map(|f| f.version.clone().unwrap_or_else(|| "torch".to_string())),
            cuda_wheels: self
                .here
                .filter(|_| existing.is_some_and(|f| f.variant.as_deref() == Some("cuda")))
                .map(|e| e.nvidia_wheels.iter().map(|w| w.name.clone()).collect())
                .unwrap_or_default(),
            override_value,
        })
    }

    /// Least change: the release that is there, in its ROCm build, when that carries the
    /// target; else the newest release that does; else the same through the override sibling
    /// (with the override to export).
    fn wheel(&self) -> Result<(TorchWheel, Option<(String, String)>), String> {
        let m = self.m;
        let same_release_here = self.existing.and_then(|f| f.version.clone());
        let wheel_for = |t: &str| {
            m.rocm.torch_wheel(
                &m.frameworks,
                self.wanted_version
                    .as_deref()
                    .or(same_release_here.as_deref()),
                t,
                self.python_version.as_deref(),
            )
        };
        if let Some(w) = wheel_for(self.gfx) {
            return Ok((w, None));
        }
        if let Some((w, sibling)) = self
            .group
            .as_ref()
            .and_then(|g| Some((wheel_for(&g.target)?, g)))
        {
            return Ok((w, Some(sibling.exported())));
        }
        Err(self.no_wheel())
    }

    /// Why no wheel carries the target: the maintainers' word when no override can help, and
    /// the newer Python that would get one when only this Python lacks it.
    fn no_wheel(&self) -> String {
        let (m, gfx) = (self.m, self.gfx);
        let why = m
            .rocm
            .no_override(gfx)
            .map(|n| {
                format!(
                    "; HSA_OVERRIDE_GFX_VERSION is no way round it: {}",
                    n.reason
                )
            })
            .unwrap_or_default();
        let python = match self.python_version.as_deref() {
            Some(p) if m.rocm.torch_wheel(&m.frameworks, None, gfx, None).is_some() => {
                format!(
                    " for Python {p}; a newer Python can take one (--python 3.12 --env \
                     .venv-rocm makes a new environment)"
                )
            }
            _ => String::new(),
        };
        format!("no PyTorch ROCm wheel in rocm.toml carries {gfx}{python}{why}")
    }
}

/// Whether two torch versions are the same release as far as the shorter says (`2.5` and
/// `2.5.1+rocm6.2`; `2.11.*` and `2.11`).
fn same_release(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<String> {
        v.split('+')
            .next()
            .unwrap_or(v)
            .trim_end_matches(".*")
            .split('.')
            .map(str::to_string)
            .collect()
    };
    let (a, b) = (parts(a), parts(b));
    a.iter().zip(&b).all(|(x, y)| x == y)
}

/// Exports `HSA_OVERRIDE_GFX_VERSION` for every login (a profile.d file): the maintainers' way
/// to run a target through its sibling's code.
fn override_step(value: &str, family: &str) -> Step {
    let line = format!("export HSA_OVERRIDE_GFX_VERSION={value}");
    Step {
        serves: Vec::new(),
        id: "hsa-override".to_string(),
        title: format!("HSA_OVERRIDE_GFX_VERSION={value} for every login"),
        why: format!(
            "The GPU's own target is in no ROCm or PyTorch list, its {family} sibling is: the \
             ROCm runtime loads the sibling's code when HSA_OVERRIDE_GFX_VERSION={value} is set \
             before the program starts (rocm.toml override_group). A service needs it in its own \
             environment (systemd Environment=, docker -e)."
        ),
        guards: vec![Guard::skip(
            Check::FileHasLine {
                path: OVERRIDE_FILE.to_string(),
                line: line.clone(),
            },
            format!("{OVERRIDE_FILE} exports it"),
        )],
        commands: vec![
            Command::WriteFile {
                path: OVERRIDE_FILE.to_string(),
                lines: vec![
                    "# Written by gpu-doctor plan: run this GPU with its sibling's ROCm code."
                        .to_string(),
                    line,
                ],
            },
            Command::Say(
                "Log out and in again (or source the file): new logins have the variable."
                    .to_string(),
            ),
        ],
        needs_root: true,
        reboot: false,
    }
}

/// Fetches and installs AMD's installer package for the release.
fn installer_step(choice: &RocmChoice<'_>) -> Step {
    let (i, codename) = (choice.installer, &choice.codename);
    let url = format!("{}{}", i.url_for(codename), i.deb);
    let file = Word::Join(vec![Word::Var("tmp"), Word::lit(format!("/{}", i.deb))]);
    Step {
        serves: Vec::new(),
        id: "amdgpu-install".to_string(),
        title: format!("AMD's installer for ROCm {} ({})", i.rocm, i.deb),
        why: format!(
            "amdgpu-install sets up the repo.radeon.com apt sources of ROCm {} for Ubuntu \
             {codename} and installs ROCm by use case (rocm.toml amdgpu_install: {}).",
            i.rocm, i.source
        ),
        guards: vec![
            Guard::skip(
                Check::DpkgVersion {
                    package: "amdgpu-install".to_string(),
                    prefix: i.version().unwrap_or("").to_string(),
                    suffix: String::new(),
                },
                format!("amdgpu-install {} is installed", i.version().unwrap_or("")),
            ),
            Guard::fail(
                Check::CommandMissing("wget".to_string()),
                format!("wget is needed to fetch {url}; install it and run the plan again"),
            ),
        ],
        commands: vec![
            Command::Run {
                argv: vec![
                    Word::lit("wget"),
                    Word::lit("-qO"),
                    file.clone(),
                    Word::lit(url),
                ],
                sudo: false,
            },
            Command::Run {
                argv: vec![
                    Word::lit("apt-get"),
                    Word::lit("install"),
                    Word::lit("-y"),
                    file,
                ],
                sudo: true,
            },
            Command::Run {
                argv: words(["apt-get", "update"]),
                sudo: true,
            },
        ],
        needs_root: true,
        reboot: false,
    }
}

/// Installs ROCm with amdgpu-install.
fn rocm_step(m: &Manifests, choice: &RocmChoice<'_>) -> Step {
    let rocm = &choice.installer.rocm;
    let mut prereqs = words(["apt-get", "install", "-y"]);
    prereqs.extend(m.rocm.install.prerequisites.iter().map(Word::lit));
    let mut argv = words(["amdgpu-install", "-y"]);
    argv.push(Word::lit(format!("--usecase={}", choice.usecase)));
    if choice.no_dkms {
        argv.push(Word::lit("--no-dkms"));
    }
    Step {
        serves: Vec::new(),
        id: "rocm".to_string(),
        title: format!("ROCm {rocm} (amdgpu-install --usecase={})", choice.usecase),
        why: format!(
            "ROCm {rocm}'s official list has this GPU's target (rocm.toml release). {} ({})",
            if choice.no_dkms {
                "--no-dkms keeps the amdgpu driver that works now: only the user-space stack is \
                 installed."
            } else {
                "No working amdgpu driver with /dev/kfd is there, so AMD's amdgpu-dkms kernel \
                 driver comes with it; it takes effect after a reboot."
            },
            m.rocm.install.source
        ),
        guards: vec![Guard::skip(
            Check::FileContains {
                path: "/opt/rocm/.info/version".to_string(),
                text: rocm.clone(),
            },
            format!("/opt/rocm is ROCm {rocm}"),
        )],
        commands: vec![
            Command::Run {
                argv: prereqs,
                sudo: true,
            },
            Command::Run { argv, sudo: true },
        ],
        needs_root: true,
        reboot: !choice.no_dkms,
    }
}

/// Adds the user to the device groups when the report says they lack one.
fn groups_step(report: &Report, m: &Manifests) -> Option<Step> {
    if report.host.container.is_some() {
        return None;
    }
    let user = report.rocm.as_ref()?.user.as_ref()?;
    let name = user.name.clone()?;
    if user.uid == Some(0) {
        return None;
    }
    let missing: Vec<&String> = m
        .rocm
        .install
        .groups
        .iter()
        .filter(|g| !user.groups.contains(g))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let groups = m.rocm.install.groups.join(",");
    Some(Step {
        serves: Vec::new(),
        id: "groups".to_string(),
        title: format!("Add {name} to the {groups} groups"),
        why: format!(
            "ROCm opens /dev/kfd and /dev/dri/renderD* read-write; their group is render (video \
             on older udev rules), and {name} is not in {} ({}).",
            missing
                .iter()
                .map(|g| g.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            m.rocm.install.source
        ),
        guards: Vec::new(),
        commands: vec![
            Command::Run {
                argv: vec![
                    Word::lit("usermod"),
                    Word::lit("-a"),
                    Word::lit("-G"),
                    Word::lit(groups),
                    // The name is never an option, whatever it starts with (#40).
                    Word::lit("--"),
                    Word::lit(name),
                ],
                sudo: true,
            },
            Command::Say(
                "Log out and in again (or reboot): the groups apply to new logins.".to_string(),
            ),
        ],
        needs_root: true,
        reboot: false,
    })
}

/// pip-installs the ROCm wheel, replacing the build that cannot run on the GPU.
fn torch_step(m: &Manifests, t: &TorchChoice, wheel: &TorchWheel) -> Step {
    let python = Python::Prefix(t.env.clone());
    let url = m.frameworks.torch_index_url(&wheel.variant);
    let requirement = format!("torch=={}", wheel.release);
    let mut commands = Vec::new();
    if t.replaces.is_some() {
        let mut args = words(["uninstall", "-y", "torch"]);
        args.extend(t.cuda_wheels.iter().map(Word::lit));
        commands.push(Command::Pip {
            python: python.clone(),
            args,
            version: None,
            companions: false,
        });
    }
    commands.push(Command::Pip {
        python: python.clone(),
        args: words(["install", requirement.as_str(), "--index-url", url.as_str()]),
        version: None,
        companions: false,
    });
    let prefix = wheel.release.trim_end_matches('*').to_string();
    let prefix = if prefix.ends_with('.') {
        prefix
    } else {
        format!("{prefix}.")
    };
    Step {
        serves: Vec::new(),
        id: "torch".to_string(),
        title: format!(
            "PyTorch {} ({}) in {}",
            wheel.release.trim_end_matches(".*"),
            wheel.variant,
            t.env
        ),
        why: format!(
            "PyTorch's {} index serves ROCm builds whose wheels carry {} (rocm.toml \
             torch_targets; frameworks.toml). --index-url, not --extra-index-url: beside PyPI pip \
             may take the CUDA wheel.{}",
            wheel.variant,
            match &t.override_value {
                Some((_, family)) => format!("this GPU's {family} sibling target"),
                None => "this GPU's target".to_string(),
            },
            t.replaces
                .as_deref()
                .map(|r| format!(
                    " torch {r} is there and cannot run on the GPU: it is uninstalled first."
                ))
                .unwrap_or_default()
        ),
        guards: vec![Guard::skip(
            Check::PythonDist {
                python,
                dist: "torch".to_string(),
                prefix,
                local: Some(wheel.variant.clone()),
            },
            format!(
                "torch {} from {} is installed",
                wheel.release, wheel.variant
            ),
        )],
        commands,
        needs_root: false,
        reboot: false,
    }
}

/// Checks the result: gpu-doctor's doctor, `rocminfo` (ROCm's own view of the GPU agents)
/// and, with a planned torch, whether it sees the GPU. `gpu-doctor smoke` is NVIDIA's (it
/// says so on AMD machines), so it is not run here.
fn verify_step(rocminfo: bool, torch: Option<&TorchChoice>) -> Step {
    let mut commands = vec![Command::Run {
        argv: words(["gpu-doctor", "doctor"]),
        sudo: false,
    }];
    if rocminfo {
        commands.push(Command::Run {
            argv: vec![Word::path("/opt/rocm/bin/rocminfo")],
            sudo: false,
        });
    }
    if let Some(t) = torch {
        commands.push(Command::Run {
            argv: vec![
                Word::Join(vec![
                    Word::path(t.env.trim_end_matches('/')),
                    Word::lit("/bin/python"),
                ]),
                Word::lit("-c"),
                Word::lit(
                    "import torch; assert torch.cuda.is_available(), 'torch sees no GPU'; \
                     print(torch.version.hip, torch.cuda.get_device_name(0))",
                ),
            ],
            sudo: false,
        });
    }
    Step {
        serves: Vec::new(),
        id: "verify".to_string(),
        title: if rocminfo {
            "Check the result with gpu-doctor and rocminfo"
        } else {
            "Check the result with gpu-doctor"
        }
        .to_string(),
        why: "gpu-doctor doctor re-examines the machine; rocminfo lists the GPU agents the ROCm \
              runtime sees (each with its gfx target); a planned torch must see the GPU."
            .to_string(),
        guards: vec![
            Guard::skip(
                Check::RebootPending,
                "reboot (and log in again) first; then run: gpu-doctor doctor && \
                 /opt/rocm/bin/rocminfo",
            ),
            Guard::skip(
                Check::CommandMissing("gpu-doctor".to_string()),
                "gpu-doctor is not on PATH; run gpu-doctor doctor and /opt/rocm/bin/rocminfo \
                 yourself",
            ),
        ],
        commands,
        needs_root: false,
        reboot: false,
    }
}

/// The findings the plan fixes and those it leaves, with the latter's own fixes.
fn findings(machine: &Machine, fixes: &[&str]) -> (Vec<FindingNote>, Vec<FindingNote>) {
    let mut addresses = Vec::new();
    let mut leaves = Vec::new();
    for f in &machine.findings {
        let fixed = fixes.contains(&f.id.as_str());
        let note = FindingNote {
            id: f.id.clone(),
            title: f.title.clone(),
            fix: (!fixed).then(|| f.fix.clone()).flatten(),
        };
        if fixed {
            addresses.push(note);
        } else {
            leaves.push(note);
        }
    }
    (addresses, leaves)
}

/// What the plan leaves as it is.
fn untouched(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn installers_and_releases_agree() {
        let m = crate::manifest::embedded();
        // The newest installer for noble whose release lists gfx1100 is 7.1.1.
        let i = m.rocm.installer_for("noble", "gfx1100").expect("installer");
        assert_eq!(i.rocm, "7.1.1");
        assert_eq!(i.version(), Some("7.1.1.70101-1"));
        // RDNA 4 first appears in 6.4.1's list; 6.2.1 (jammy) lists it not.
        assert!(supported_by_release(m, "6.2.1", "gfx1201").is_none());
        assert!(supported_by_release(m, "6.4.2", "gfx1201").is_some());
        // gfx1102 runs through its RDNA 3 sibling; gfx1103 never does.
        assert_eq!(
            sibling_release(m, "7.1.1", "gfx1102"),
            Some(("RDNA 3".to_string(), "11.0.0".to_string()))
        );
        assert!(supported_by_release(m, "7.1.1", "gfx1103").is_none());
        assert!(crate::version::Version::parse(&i.rocm).is_some());
    }
}

//! From the machine, the target and the manifests to a [`Decision`]: what to install, at which
//! versions, or a [`Refusal`] that says why the target cannot work here. Pure; the steps that
//! carry a decision out are built by [`super::apt`] and [`super::python`].
//!
//! The order matters and follows the dependencies: the GPUs limit CUDA and the driver; the
//! framework build depends on the driver it can run on; the driver is changed only when
//! something the plan installs (or something already installed) needs more than it runs.

use crate::diagnose::ids::{self, Kind};
use crate::manifest::{AptRepo, DriverBranch, Manifests};
use crate::version::Version;

use super::choose::{self, DriverCap};
use super::frameworks::{self, FrameworkPlan};
use super::machine::{InstalledFramework, Machine};
use super::target::{DriverChoice, FrameworkName, Target, Via};
use super::{Refusal, Serves};

mod driver;
mod fixes;
mod interpreter;
mod stack;

use driver::*;
use fixes::*;
pub(super) use interpreter::{NewPython, UV_HOME};
use stack::*;

/// The Ubuntu release and NVIDIA repository the apt steps are for.
#[derive(Debug, Clone)]
pub struct AptTarget<'m> {
    /// `ubuntu-22.04`.
    pub os: String,
    /// NVIDIA's tag, `ubuntu2204`.
    pub distro: String,
    pub repo: &'m AptRepo,
    /// The repositories (repos.toml ids) the apt lines are checked against: NVIDIA's and the
    /// release's own archive.
    pub repo_ids: Vec<String>,
    /// NVIDIA's repository among them.
    pub nvidia_repo: String,
}

/// What happens to the driver.
#[derive(Debug, Clone)]
pub enum DriverPlan<'m> {
    /// The working driver runs everything the plan installs.
    Keep,
    /// Install this branch from NVIDIA's repository (open modules when every GPU takes them).
    Install {
        row: &'m DriverBranch,
        open: bool,
        /// The working driver it replaces.
        replaces: Option<String>,
        /// Why the driver changes, for the step's comment.
        why: String,
        /// Why this kernel-module flavour.
        flavour_why: String,
    },
    /// A driver is needed that this plan cannot install here (WSL, container, not Ubuntu);
    /// the plan says so first and points to where it is done.
    Elsewhere { needed: String, reason: String },
}

/// cuDNN for the system (apt) or a conda environment.
#[derive(Debug, Clone)]
pub struct CudnnPlan {
    pub major: u64,
    /// Stay on this release line (`9.10.2`) because newer ones dropped these GPUs or this CUDA.
    pub pin: Option<String>,
}

/// Where Python packages go.
#[derive(Debug, Clone)]
pub enum EnvPlan {
    /// A virtual environment folder (created when missing) and the Python that creates it.
    Venv { path: String, python: String },
    /// A conda environment (created when missing) with this Python.
    Conda { name: String, python: String },
}

/// Reinstalling a framework in an environment that already has it (a CPU-only torch).
#[derive(Debug, Clone)]
pub struct EnvFix {
    /// The environment's prefix.
    pub env: String,
    pub framework: FrameworkPlan,
    /// The finding it fixes.
    pub serves: &'static Kind,
}

/// A driver that is installed and built for the running kernel but not loaded: what loads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadModule {
    /// Secure Boot refuses the module: enroll the key DKMS signed it with, then reboot.
    Enroll { key: String },
    /// Nothing refuses it that the files show: load it.
    Modprobe,
}

/// Whether the machine's missing driver is a module that only needs loading: built for the
/// running kernel, no nouveau in the way, not a container or WSL (whose driver is elsewhere).
fn load_module(machine: &Machine) -> Option<LoadModule> {
    let missing = machine.working_driver().is_none()
        && machine.driver_fixed().is_none()
        && !machine.nouveau_loaded
        && machine.has(&ids::NO_DRIVER);
    if !missing || !machine.module_built {
        return None;
    }
    Some(match machine.secure_boot {
        Some(true) => LoadModule::Enroll {
            key: machine
                .module_signing_key
                .clone()
                .unwrap_or_else(|| "/var/lib/dkms/mok.pub".to_string()),
        },
        _ => LoadModule::Modprobe,
    })
}

/// Everything the plan will do, decided.
#[derive(Debug, Clone)]
pub struct Decision<'m> {
    pub via: Via,
    pub apt: Option<AptTarget<'m>>,
    pub ccs: Vec<String>,
    pub nouveau: bool,
    pub driver: DriverPlan<'m>,
    /// CUDA `major.minor` of the toolkit (apt) or of `cuda-version` (conda).
    pub toolkit: Option<Version>,
    pub cudnn: Option<CudnnPlan>,
    pub nccl: bool,
    pub framework: Option<FrameworkPlan>,
    pub env: Option<EnvPlan>,
    pub fixes: Vec<EnvFix>,
    /// The loaded kernel module and the libraries differ: a reboot is the fix.
    pub reboot_for_mismatch: bool,
    /// The findings this plan fixes.
    pub addresses: Vec<&'static Kind>,
    pub notes: Vec<String>,
    /// What the driver change (if any) is for: findings, or the request.
    pub driver_serves: Vec<Serves>,
    /// The flags of the request the stack steps serve (`--framework torch`), when one was
    /// made ([`Decision::request`]).
    pub request_flags: Option<String>,
    /// Changes this plan leaves out on purpose, each with the command that plans it
    /// (a newer build a driver upgrade would unlock).
    pub options: Vec<String>,
    /// The Python a new environment is made with because the one it would get does not fit
    /// the framework (pypi.toml).
    pub env_python: Option<String>,
    /// How a new virtual environment gets its Python (absent: the environment exists, or
    /// conda makes it).
    pub new_python: Option<NewPython>,
    /// The driver is built for this kernel and only needs loading or its key enrolled.
    pub load_module: Option<LoadModule>,
}

/// What something the plan installs or keeps needs of the driver.
#[derive(Debug, Clone)]
struct Need {
    cuda: Version,
    /// Toolkits need the driver for their own CUDA minor; pip wheels run through minor-version
    /// compatibility.
    native: bool,
    /// A framework's own driver minimum (JAX, TensorFlow).
    floor: Option<Version>,
    what: String,
    /// Asked for now (a request), rather than already installed.
    requested: bool,
    /// The finding (or request) a driver change for it serves.
    serves: Option<Serves>,
}

impl Need {
    fn met_by(&self, m: &Manifests, cap: &DriverCap) -> bool {
        let runs = if self.native {
            cap.runs_natively(&self.cuda)
        } else {
            cap.runs(&m.cuda, &self.cuda)
        };
        let floor = self.floor.as_ref().is_none_or(|floor| {
            if cap.planned {
                cap.version.major() >= floor.major()
            } else {
                &cap.version >= floor
            }
        });
        runs && floor
    }
}

/// Decides the plan or refuses the target: the GPUs and the apt target first, then what is
/// installed already, then the stack (or the fixes), then the driver all of it runs on.
///
/// # Errors
/// A [`Refusal`] when the target cannot work on this machine.
pub(super) fn decide<'m>(
    machine: &Machine,
    m: &'m Manifests,
    target: &Target,
) -> Result<Decision<'m>, Refusal> {
    let via = target.via();
    let ccs = gpu_ccs(machine)?;
    let apt = match (via, apt_target(machine, m, target)) {
        (_, Ok(apt)) => Some(apt),
        (Via::Apt, Err(why)) => return Err(Refusal::new(why)),
        (_, Err(why)) if target.os.is_some() => return Err(Refusal::new(why)),
        (_, Err(_)) => None,
    };
    let as_of = choose::as_of(&m.cuda);
    let named = match target.driver {
        DriverChoice::Branch(b) => {
            Some(choose::named_branch(&m.cuda, b, None, &ccs).map_err(Refusal::new)?)
        }
        DriverChoice::Auto | DriverChoice::Keep => None,
    };
    let keep = target.driver == DriverChoice::Keep;
    let working = working_cap(machine, keep);
    let mut d = Decision::new(machine, target, via, apt, ccs.clone());
    // A driver built for this kernel that only needs loading (or its key enrolled) is not
    // reinstalled: the finding's own fix is the plan.
    let this_system = target.os.as_ref().is_none_or(|os| {
        matches!((&machine.os_id, &machine.os_version), (Some(id), Some(v)) if &format!("{id}-{v}") == os)
    });
    if !target.names_a_stack()
        && this_system
        && let Some(load) = load_module(machine)
    {
        push_unique(&mut d.addresses, &ids::NO_DRIVER);
        d.driver_serves = vec![Serves::Finding(&ids::NO_DRIVER)];
        d.load_module = Some(load);
        return Ok(d);
    }
    // What is installed already must keep working after the plan.
    let mut needs = installed_needs(machine, m);
    let fixing = !target.names_a_stack() && has_fix(machine, &needs, m, &ccs, working.as_ref());
    if fixing {
        plan_fixes(
            machine,
            m,
            target,
            &ccs,
            working.as_ref(),
            &mut d,
            &mut needs,
        )?;
    } else if !target.names_a_stack() && target.driver != DriverChoice::Auto && healthy(machine) {
        // Nothing is wrong and nothing was asked: a plan changes nothing. Installing "the
        // newest stack" here would change a working machine (and a system toolkit on
        // LD_LIBRARY_PATH shadows the wheels of every environment).
        d.notes.push(
            "Nothing to fix: the doctor finds no error or warning here, so this plan changes \
             nothing. To install or upgrade something, name it: `gpu-doctor plan --framework \
             torch` (or tensorflow, jax[cuda13], cupy), `--cuda X.Y` for a system toolkit; \
             `--driver auto` plans the newest stack with the driver it needs."
                .to_string(),
        );
    } else if !target.names_a_stack() && !healthy(machine) {
        // Something is wrong that no step of a plan fixes in its own scope (a cuDNN clash
        // inside one environment, a shadowing LD_LIBRARY_PATH): changing the system would not
        // fix it, so the plan changes nothing and lists each finding with its own fix.
        d.notes.push(
            "Nothing this plan could install fixes the findings below in their own scope (each \
             lists its own fix), so it changes nothing on the system. Name a target (--cuda, \
             --framework) to plan one anyway."
                .to_string(),
        );
    } else {
        // What the picks must run on: the named branch, else a driver that stays (no
        // --driver, or one that cannot change here); under --driver auto the newest builds,
        // with the driver they need.
        let cap = named
            .and_then(DriverCap::planned)
            .or_else(|| working.clone().filter(|c| c.fixed));
        // A driver that stays (a working one without --driver, or one that cannot change
        // here), or the one named with --driver, caps the CUDA the plan picks when none is named.
        let ceiling = working
            .as_ref()
            .filter(|c| c.fixed)
            .map(|c| c.max_cuda.clone())
            .or_else(|| named.and_then(|row| Version::parse(&row.max_cuda)));
        StackAsk {
            machine,
            m,
            target,
            ccs: &ccs,
            cap: cap.as_ref(),
            ceiling: ceiling.as_ref(),
            as_of: &as_of,
        }
        .plan(&mut d, &mut needs)?;
        if keep && working.is_some() && machine.driver_fixed().is_none() {
            d.options
                .extend(upgrade_options(machine, m, target, &ccs, &as_of, &d));
        }
    }
    let (driver, serves) = DriverAsk {
        machine,
        m,
        d: &d,
        named,
        working: working.as_ref(),
        needs: &needs,
        as_of: &as_of,
        keep_request: keep && !fixing,
    }
    .decide()?;
    d.driver = driver;
    d.driver_serves = serves;
    if let Some(note) = legacy_note(machine, m, &ccs) {
        d.notes.push(note);
    }
    d.address_driver_findings(machine);
    Ok(d)
}

impl<'m> Decision<'m> {
    /// A decision that changes nothing yet: the driver kept, nothing installed. A loaded
    /// nouveau is addressed from the start, whatever else is planned (the apt steps turn it
    /// off, a plan without them says how); the request its stack steps serve is named once.
    fn new(
        machine: &Machine,
        target: &Target,
        via: Via,
        apt: Option<AptTarget<'m>>,
        ccs: Vec<String>,
    ) -> Decision<'m> {
        let mut d = Decision {
            via,
            apt,
            ccs,
            nouveau: machine.nouveau_loaded,
            driver: DriverPlan::Keep,
            toolkit: None,
            cudnn: None,
            nccl: false,
            framework: None,
            env: None,
            fixes: Vec::new(),
            reboot_for_mismatch: false,
            addresses: Vec::new(),
            notes: Vec::new(),
            driver_serves: Vec::new(),
            request_flags: target.names_a_stack().then(|| super::shell::flags(target)),
            options: Vec::new(),
            env_python: None,
            new_python: None,
            load_module: None,
        };
        if d.nouveau {
            d.addresses.push(&ids::NOUVEAU_LOADED);
        }
        d
    }

    /// Once the driver is decided: a driver install addresses the findings it serves, and a
    /// kernel module older than its libraries is fixed by the reboot the plan ends with.
    fn address_driver_findings(&mut self, machine: &Machine) {
        if let DriverPlan::Install { .. } = self.driver {
            for serves in &self.driver_serves {
                if let Serves::Finding(kind) = serves
                    && machine.has(kind)
                {
                    push_unique(&mut self.addresses, *kind);
                }
            }
        }
        if machine.has(&ids::DRIVER_LIBRARY_MISMATCH) {
            self.reboot_for_mismatch = true;
            push_unique(&mut self.addresses, &ids::DRIVER_LIBRARY_MISMATCH);
        }
    }

    /// The request the stack steps serve, when one was made.
    pub fn request(&self) -> Option<Serves> {
        self.request_flags.clone().map(Serves::Request)
    }
}

fn push_unique<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// The compute capabilities of the NVIDIA GPUs, deduplicated; every GPU must have one.
fn gpu_ccs(machine: &Machine) -> Result<Vec<String>, Refusal> {
    if machine.gpus.is_empty() {
        let reason = if machine.amd_gpu {
            "no NVIDIA GPU on this machine (an AMD GPU is there; gpu-doctor plans NVIDIA's CUDA stack only)"
        } else {
            "no NVIDIA GPU on this machine: there is nothing for a CUDA stack to run on"
        };
        return Err(Refusal::new(format!(
            "{reason}. To plan for another machine from here (a build container, a CI runner), \
             state its GPU and driver: GPU_DOCTOR_GPU_CC=8.9 (required), GPU_DOCTOR_GPU_NAME, \
             GPU_DOCTOR_DRIVER_VERSION=550.54.15 and GPU_DOCTOR_CUDA_VERSION=12.4 (leave both \
             out for a machine without a driver), GPU_DOCTOR_GPU_MEMORY_MIB; and --os \
             ubuntu-22.04|ubuntu-24.04 for its system"
        )));
    }
    let mut ccs: Vec<String> = Vec::new();
    for gpu in &machine.gpus {
        let Some(cc) = &gpu.compute_capability else {
            let id = gpu.pci_device_id.as_deref().unwrap_or("unknown");
            let known = gpu
                .identity_note
                .as_deref()
                .map_or_else(String::new, |note| format!(" What is known: {note}."));
            return Err(Refusal::new(format!(
                "the compute capability of GPU {} (PCI device {id}) is unknown: neither a driver \
                 nor the GPU table says it, and the driver, CUDA and framework builds all depend \
                 on it. State it with GPU_DOCTOR_GPU_CC (for example GPU_DOCTOR_GPU_CC=8.9) and \
                 plan again.{known}",
                gpu.index
            )));
        };
        if !ccs.contains(cc) {
            ccs.push(cc.clone());
        }
    }
    ccs.sort_by(|a, b| crate::version::compare(a, b));
    Ok(ccs)
}

/// The architectures apt plans are made for: the machine's (`uname -m`), the name NVIDIA's CUDA
/// repository gives it (`sbsa` for Arm servers: Grace Hopper, Grace Blackwell, DGX Spark; the
/// `arm64` repository is Jetson's, which plans do not serve), and the name of Ubuntu's own
/// archive rows in repos.toml (`arm64`: ports.ubuntu.com).
const APT_ARCHES: [(&str, &str, &str); 2] =
    [("x86_64", "x86_64", "x86_64"), ("aarch64", "sbsa", "arm64")];

/// The machine architecture a plan is for: the report's (`uname -m`), else x86_64 (a machine
/// described by hand, `GPU_DOCTOR_GPU_CC`, without one).
pub(super) fn machine_arch(machine: &Machine) -> &str {
    machine.arch.as_deref().unwrap_or("x86_64")
}

/// The Ubuntu release the apt steps are for: `--os`, else this machine's, when NVIDIA's
/// repository in the manifests has it for this machine's architecture.
fn apt_target<'m>(
    machine: &Machine,
    m: &'m Manifests,
    target: &Target,
) -> Result<AptTarget<'m>, String> {
    let arch = machine_arch(machine);
    let Some(&(_, nvidia_arch, distro_arch)) = APT_ARCHES.iter().find(|(a, _, _)| *a == arch)
    else {
        let known: Vec<&str> = APT_ARCHES.iter().map(|(a, _, _)| *a).collect();
        return Err(format!(
            "this machine is {arch}: apt plans are made for {} (NVIDIA's x86_64 and sbsa \
             repositories)",
            known.join(" and ")
        ));
    };
    let known: Vec<String> = m
        .install
        .apt_repos
        .iter()
        .filter(|r| r.arch == nvidia_arch)
        .filter_map(|r| {
            let version = r.distro.strip_prefix("ubuntu")?;
            (version.len() == 4).then(|| format!("ubuntu-{}.{}", &version[..2], &version[2..]))
        })
        .collect();
    let (os, from_flag) = match &target.os {
        Some(os) => (os.clone(), true),
        None => match (machine.os_id.as_deref(), machine.os_version.as_deref()) {
            (Some(id), Some(version)) => (format!("{id}-{version}"), false),
            _ => (String::new(), false),
        },
    };
    if !known.contains(&os) {
        let what = if from_flag {
            format!("--os {os} is not a system gpu-doctor plans for")
        } else if os.is_empty() {
            "this machine's system is unknown (no /etc/os-release)".to_string()
        } else {
            format!(
                "this machine runs {os}, which NVIDIA's apt repository in the manifests does not cover"
            )
        };
        return Err(format!(
            "{what}: apt plans are made for {} (NVIDIA's repository, {nvidia_arch})",
            known.join(", ")
        ));
    }
    let distro = os.replace(['-', '.'], "");
    let repo = m.install.apt_repo(&distro, nvidia_arch).ok_or_else(|| {
        format!("no NVIDIA repository for {distro}/{nvidia_arch} in the manifests")
    })?;
    let repo_ids: Vec<String> = m
        .repos
        .for_system(&os, nvidia_arch)
        .chain(
            m.repos
                .for_system(&os, distro_arch)
                .filter(|_| distro_arch != nvidia_arch),
        )
        .filter(|r| r.kind == "apt")
        .map(|r| r.id.clone())
        .collect();
    let nvidia_repo = m
        .repos
        .serving("nvidia", &os, nvidia_arch)
        .map(|r| r.id.clone())
        .next()
        .ok_or_else(|| format!("repos.toml has no NVIDIA repository for {os} ({nvidia_arch})"))?;
    Ok(AptTarget {
        os,
        distro,
        repo,
        repo_ids,
        nvidia_repo,
    })
}

#[cfg(test)]
mod tests;

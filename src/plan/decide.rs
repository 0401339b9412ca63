//! From the machine, the target and the manifests to a [`Decision`]: what to install, at which
//! versions, or a [`Refusal`] that says why the target cannot work here. Pure; the steps that
//! carry a decision out are built by [`super::apt`] and [`super::python`].
//!
//! The order matters and follows the dependencies: the GPUs limit CUDA and the driver; the
//! framework build depends on the driver it can run on; the driver is changed only when
//! something the plan installs (or something already installed) needs more than it runs.

use crate::manifest::{AptRepo, DriverBranch, Manifests};
use crate::version::Version;

use super::Refusal;
use super::choose::{self, DriverCap};
use super::frameworks::{self, FrameworkPlan};
use super::machine::{InstalledFramework, Machine};
use super::target::{DriverChoice, FrameworkName, Target, Via};

/// The Pythons a new environment may be made with, oldest first.
const PYTHONS: [&str; 7] = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"];

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
    pub serves: String,
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
    /// Finding ids this plan fixes.
    pub addresses: Vec<String>,
    pub notes: Vec<String>,
    /// What the driver change (if any) is for: finding ids, or the request.
    pub driver_serves: Vec<String>,
    /// The request the stack steps serve (`request: --framework torch`), when one was made.
    pub request: Option<String>,
    /// Changes this plan leaves out on purpose, each with the command that plans it
    /// (a newer build a driver upgrade would unlock).
    pub options: Vec<String>,
    /// The Python a new environment is made with because the one it would get does not fit
    /// the framework (pypi.toml).
    pub env_python: Option<String>,
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
    /// The finding id (or request) a driver change for it serves.
    serves: String,
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

/// Decides the plan or refuses the target.
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
    let apt = apt_target(machine, m, target);
    let apt = match (via, apt) {
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
    let mut d = Decision {
        via,
        apt,
        ccs: ccs.clone(),
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
        request: target
            .names_a_stack()
            .then(|| format!("request: {}", super::shell::flags(target))),
        options: Vec::new(),
        env_python: None,
    };
    if d.nouveau {
        d.addresses.push("nouveau-loaded".to_string());
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
        let cap_for_choice = named
            .and_then(DriverCap::planned)
            .or_else(|| working.clone().filter(|c| c.fixed));
        // A driver that stays (a working one without --driver, or one that cannot change
        // here), or the one named with --driver, caps the CUDA the plan picks when none is named.
        let ceiling = working
            .as_ref()
            .filter(|c| c.fixed)
            .map(|c| c.max_cuda.clone())
            .or_else(|| named.and_then(|row| Version::parse(&row.max_cuda)));
        plan_stack(
            machine,
            m,
            target,
            &ccs,
            cap_for_choice.as_ref(),
            ceiling.as_ref(),
            &as_of,
            &mut d,
            &mut needs,
        )?;
        if keep && working.is_some() && machine.driver_fixed().is_none() {
            d.options
                .extend(upgrade_options(machine, m, target, &ccs, &as_of, &d));
        }
    }
    let (driver, serves) = decide_driver(
        machine,
        m,
        &d,
        named,
        working.as_ref(),
        &needs,
        &as_of,
        keep && !fixing,
    )?;
    d.driver = driver;
    d.driver_serves = serves;
    if let Some(note) = legacy_note(machine, m, &ccs) {
        d.notes.push(note);
    }
    if let DriverPlan::Install { .. } = d.driver {
        for id in d.driver_serves.clone() {
            if machine.finding(&id).is_some() {
                push_unique(&mut d.addresses, &id);
            }
        }
    }
    if machine.finding("driver-library-mismatch").is_some() {
        d.reboot_for_mismatch = true;
        push_unique(&mut d.addresses, "driver-library-mismatch");
    }
    Ok(d)
}

/// For GPUs NVIDIA's current drivers no longer support (Kepler: R470; Maxwell, Pascal, Volta:
/// R580): which ones, and that the plan stays on their last branch and its CUDA.
fn legacy_note(machine: &Machine, m: &Manifests, ccs: &[String]) -> Option<String> {
    let last = choose::last_branch(&m.cuda, ccs)?;
    let legacy: Vec<String> = machine
        .gpus
        .iter()
        .filter(|g| {
            g.compute_capability
                .as_deref()
                .and_then(|cc| m.cuda.compute_capability(cc))
                .and_then(|row| row.last_driver_branch)
                .is_some()
        })
        .map(|g| {
            let name = g.name.as_deref().unwrap_or("GPU");
            match (&g.architecture, &g.compute_capability) {
                (Some(arch), Some(cc)) => format!("{name} ({arch}, compute capability {cc})"),
                _ => name.to_string(),
            }
        })
        .collect();
    let max_cuda = m
        .cuda
        .driver_branches
        .iter()
        .find(|b| b.branch == last)
        .map_or_else(String::new, |b| {
            format!(", which runs CUDA up to {}", b.max_cuda)
        });
    Some(format!(
        "legacy GPU: {} is supported by driver branches up to R{last} only (its last branch{max_cuda}); \
         the plan stays on R{last} and newer drivers will not drive it",
        legacy.join(", ")
    ))
}

fn push_unique(list: &mut Vec<String>, id: &str) {
    if !list.iter().any(|x| x == id) {
        list.push(id.to_string());
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

/// The Ubuntu release the apt steps are for: `--os`, else this machine's, when NVIDIA's
/// repository in the manifests has it for this architecture.
fn apt_target<'m>(
    machine: &Machine,
    m: &'m Manifests,
    target: &Target,
) -> Result<AptTarget<'m>, String> {
    const ARCH: &str = "x86_64";
    let known: Vec<String> = m
        .install
        .apt_repos
        .iter()
        .filter(|r| r.arch == ARCH)
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
            "{what}: apt plans are made for {} (NVIDIA's repository, {ARCH})",
            known.join(", ")
        ));
    }
    if let Some(arch) = machine.arch.as_deref()
        && arch != ARCH
    {
        return Err(format!(
            "this machine is {arch}: apt plans use NVIDIA's {ARCH} repository only"
        ));
    }
    let distro = os.replace(['-', '.'], "");
    let repo = m
        .install
        .apt_repo(&distro, ARCH)
        .ok_or_else(|| format!("no NVIDIA repository for {distro}/{ARCH} in the manifests"))?;
    let repo_ids: Vec<String> = m
        .repos
        .for_system(&os, ARCH)
        .filter(|r| r.kind == "apt")
        .map(|r| r.id.clone())
        .collect();
    let nvidia_repo = m
        .repos
        .serving("nvidia", &os, ARCH)
        .map(|r| r.id.clone())
        .next()
        .ok_or_else(|| format!("repos.toml has no NVIDIA repository for {os} ({ARCH})"))?;
    Ok(AptTarget {
        os,
        distro,
        repo,
        repo_ids,
        nvidia_repo,
    })
}

/// What the working driver can run, when there is one. `keep`: it stays (no `--driver`), so
/// what the plan picks must run on it, as on a driver that cannot change here.
fn working_cap(machine: &Machine, keep: bool) -> Option<DriverCap> {
    Some(DriverCap {
        version: machine.working_driver()?,
        max_cuda: machine.working_driver_cuda()?,
        planned: false,
        fixed: keep || machine.driver_fixed().is_some(),
    })
}

/// No error or warning finding: a plan with nothing named sets up the newest stable stack.
fn healthy(machine: &Machine) -> bool {
    machine
        .findings
        .iter()
        .all(|f| f.severity == crate::report::Severity::Info)
}

/// What a driver upgrade would unlock beyond what the plan picked for the working driver, as
/// options with the command that plans them: a newer framework build, a newer toolkit.
fn upgrade_options(
    machine: &Machine,
    m: &Manifests,
    target: &Target,
    ccs: &[String],
    as_of: &str,
    d: &Decision<'_>,
) -> Vec<String> {
    let mut out = Vec::new();
    let driver = machine.driver_version.as_deref().unwrap_or("");
    if let (Some(fw), Some(spec)) = (&d.framework, &target.framework) {
        let python = match &d.env {
            Some(EnvPlan::Conda { python, .. }) => Some(python.clone()),
            _ => target
                .python
                .clone()
                .or_else(|| machine.system_python.clone()),
        };
        if let Ok(free) = frameworks::resolve(
            m,
            spec,
            ccs,
            None,
            None,
            python.as_deref(),
            target.cudnn,
            d.via == Via::Pip,
        ) && free.label != fw.label
            && let Some(row) = choose::lowest_branch_for(&m.cuda, &free.cuda)
                .and_then(|_| choose::auto_branch(&m.cuda, &free.cuda, ccs, as_of).ok())
        {
            out.push(format!(
                "{} needs a newer driver than the working {driver} (R{} or newer): \
                 `gpu-doctor plan {} --driver auto` plans it with the driver upgrade and a reboot.",
                free.label,
                row.branch,
                super::shell::flags(target)
            ));
        }
    }
    if target.framework.is_none()
        && let Some(t) = &d.toolkit
        && let Some(newest) = choose::newest_stable_cuda(&m.cuda, ccs, as_of, None)
        && &newest > t
        && let Ok(row) = choose::auto_branch(&m.cuda, &newest, ccs, as_of)
    {
        let flags = super::shell::flags(target);
        let asked = if flags.is_empty() {
            String::new()
        } else {
            format!("{flags} ")
        };
        out.push(format!(
            "CUDA {newest} needs driver R{} or newer (the working {driver} runs CUDA up to {t}): \
             `gpu-doctor plan {asked}--driver auto` plans it with the driver upgrade and a reboot.",
            row.branch,
        ));
    }
    out
}

/// What the frameworks and toolkits already on the machine need of the driver.
fn installed_needs(machine: &Machine, m: &Manifests) -> Vec<Need> {
    let mut needs = Vec::new();
    for fw in &machine.frameworks {
        let Some(cuda) = fw.cuda.as_deref().and_then(Version::parse) else {
            continue;
        };
        let floor = (fw.name == FrameworkName::Jax)
            .then(|| {
                m.frameworks
                    .jax(fw.version.as_deref()?, cuda.major())?
                    .driver_min
                    .as_deref()
                    .and_then(Version::parse)
            })
            .flatten();
        needs.push(Need {
            cuda,
            native: false,
            floor,
            what: installed_what(fw),
            requested: false,
            serves: "driver-too-old-for-framework".to_string(),
        });
    }
    for (path, version) in &machine.toolkits {
        if let Some(v) = version
            .as_deref()
            .and_then(Version::parse)
            .and_then(|v| Version::parse(&v.major_minor()))
        {
            needs.push(Need {
                cuda: v,
                native: true,
                floor: None,
                what: format!("the CUDA toolkit in {path}"),
                requested: false,
                serves: "toolkit-newer-than-driver".to_string(),
            });
        }
    }
    needs
}

/// Whether something is wrong that a plan fixes without being told a target.
fn has_fix(
    machine: &Machine,
    needs: &[Need],
    m: &Manifests,
    ccs: &[String],
    working: Option<&DriverCap>,
) -> bool {
    let no_driver = machine.working_driver().is_none() && machine.driver_fixed().is_none();
    let unmet = working.is_some_and(|cap| needs.iter().any(|n| !n.met_by(m, cap)));
    let rebuild = machine
        .frameworks
        .iter()
        .any(|f| f.env_kind != "system" && torch_rebuild(m, f, ccs).is_some());
    machine.nouveau_loaded
        || no_driver
        || unmet
        || rebuild
        || machine.finding("driver-library-mismatch").is_some()
}

/// Why an installed torch must be replaced by another build of the same version: it is
/// CPU-only, or the manifests say its build has no code for one of these GPUs. The finding id
/// that says so.
fn torch_rebuild(m: &Manifests, fw: &InstalledFramework, ccs: &[String]) -> Option<&'static str> {
    if fw.name != FrameworkName::Torch {
        return None;
    }
    if fw.variant.as_deref() == Some("cpu") {
        return Some("cpu-only-framework-build");
    }
    let version = fw.version.as_deref()?;
    let tag = match version.split_once('+') {
        Some((_, local)) => local.to_string(),
        None => {
            let cuda = Version::parse(fw.cuda.as_deref()?)?;
            format!("cu{}{}", cuda.major(), cuda.minor())
        }
    };
    let build = m.frameworks.torch(version, &tag)?.build;
    ccs.iter()
        .any(|cc| choose::torch_build_covers(build, cc) == Some(false))
        .then_some("arch-not-in-build")
}

/// The fixes for what is wrong, each in its own scope: a torch build that is CPU-only, lacks
/// code for these GPUs, or needs more than the working driver runs is replaced in its own
/// environment by a build of the same release this driver runs; only what no environment step
/// can fix (no driver, a driver that predates the GPU, a toolkit newer than the driver) is
/// left in `needs` for the driver decision.
fn plan_fixes(
    machine: &Machine,
    m: &Manifests,
    target: &Target,
    ccs: &[String],
    working: Option<&DriverCap>,
    d: &mut Decision<'_>,
    needs: &mut Vec<Need>,
) -> Result<(), Refusal> {
    for fw in &machine.frameworks {
        let rebuild = torch_rebuild(m, fw, ccs);
        let what = installed_what(fw);
        // Under --driver auto (or a branch) the driver changes instead.
        let too_old = fw.name == FrameworkName::Torch
            && target.driver == DriverChoice::Keep
            && working.is_some_and(|cap| {
                needs
                    .iter()
                    .any(|n| !n.requested && n.what == what && !n.met_by(m, cap))
            });
        let finding = match rebuild {
            Some(finding) => finding,
            None if too_old => "driver-too-old-for-framework",
            None => continue,
        };
        if fw.env_kind == "system" {
            d.notes.push(format!(
                "torch {} in the system Python ({}) needs another build; this plan does not \
                 change the system Python: make a virtual environment with `gpu-doctor plan \
                 --via pip --framework torch --env DIR`.",
                fw.version.as_deref().unwrap_or(""),
                fw.env
            ));
            continue;
        }
        let version = fw
            .version
            .as_deref()
            .map(|v| v.split('+').next().unwrap_or(v).to_string());
        let spec = super::target::FrameworkSpec {
            name: FrameworkName::Torch,
            extra: None,
            version,
        };
        let python = target.python.clone().or_else(|| fw.env_python.clone());
        // The build must run on the driver that is there: the fix stays in the environment.
        let fixed = working.map(|cap| DriverCap {
            fixed: true,
            ..cap.clone()
        });
        let plan = match frameworks::resolve(
            m,
            &spec,
            ccs,
            None,
            fixed.as_ref(),
            python.as_deref(),
            None,
            false,
        ) {
            Ok(plan) => plan,
            Err(why) if rebuild.is_none() => {
                // No build of this release runs on the driver: the driver has to change.
                d.notes.push(format!("{what}: {why}"));
                continue;
            }
            Err(why) => return Err(Refusal::new(why)),
        };
        let runs = working.is_none_or(|cap| {
            Need {
                cuda: plan.cuda.clone(),
                native: false,
                floor: None,
                what: String::new(),
                requested: false,
                serves: String::new(),
            }
            .met_by(m, cap)
        });
        if rebuild.is_none() && !runs {
            continue;
        }
        if too_old {
            // This environment no longer needs more than the working driver runs.
            needs.retain(|n| n.what != what);
            d.options.push(format!(
                "{what} can stay as it is with a newer driver instead: `gpu-doctor plan \
                 --driver auto` plans the driver upgrade (and a reboot) rather than another \
                 torch build."
            ));
        }
        d.fixes.push(EnvFix {
            env: fw.env.clone(),
            framework: FrameworkPlan {
                replace: true,
                ..plan
            },
            serves: finding.to_string(),
        });
        push_unique(&mut d.addresses, finding);
    }
    Ok(())
}

/// How an installed framework is named in needs and notes.
fn installed_what(fw: &InstalledFramework) -> String {
    format!(
        "{} {} in {}",
        fw.name,
        fw.version.as_deref().unwrap_or("(version unknown)"),
        fw.env
    )
}

/// The stack the target names (or, with nothing named and nothing to fix, the newest stable
/// one for these GPUs).
#[expect(
    clippy::too_many_arguments,
    reason = "one call site; the pieces are all needed"
)]
fn plan_stack(
    machine: &Machine,
    m: &Manifests,
    target: &Target,
    ccs: &[String],
    cap: Option<&DriverCap>,
    ceiling: Option<&Version>,
    as_of: &str,
    d: &mut Decision<'_>,
    needs: &mut Vec<Need>,
) -> Result<(), Refusal> {
    let user_cuda = match &target.cuda {
        Some(text) => Some(checked_cuda(m, text, ccs)?),
        None => None,
    };
    // The environment the framework goes into, when it exists already, and its Python.
    let existing = default_env(machine, target).and_then(|(path, _)| {
        machine
            .python_envs
            .iter()
            .find(|e| e.path.trim_end_matches('/') == path.trim_end_matches('/'))
    });
    let env_python = existing.and_then(|e| e.python.clone());
    let python = target.python.clone().or(env_python).or_else(|| {
        // A new venv made with `python3` gets the system's Python.
        (d.via != Via::Conda)
            .then(|| machine.system_python.clone())
            .flatten()
    });
    let spec = target.framework.clone().or_else(|| {
        (d.via == Via::Pip).then_some(super::target::FrameworkSpec {
            name: FrameworkName::Torch,
            extra: None,
            version: None,
        })
    });
    if let Some(spec) = &spec {
        let resolve = |python: Option<&str>| {
            frameworks::resolve(
                m,
                spec,
                ccs,
                user_cuda.as_ref(),
                cap,
                python,
                target.cudnn,
                d.via == Via::Pip,
            )
        };
        // A conda environment gets the framework's own default Python unless one is named:
        // check the pip line against that one.
        let python = python.clone().or_else(|| {
            resolve(None)
                .ok()
                .and_then(|fw| fw.python_default)
                .filter(|_| d.via == Via::Conda)
        });
        let fw = match resolve(python.as_deref()) {
            Ok(fw) => fw,
            Err(why) => {
                // Would another Python do? The newest that does, for a new environment.
                let fitting = PYTHONS
                    .iter()
                    .rev()
                    .find_map(|p| resolve(Some(p)).ok().map(|fw| (*p, fw)));
                match (fitting, existing, &target.python) {
                    (Some((p, fw)), None, None) => {
                        d.notes.push(format!(
                            "{why}. So the plan makes the new environment with Python {p} \
                             (python{p} must be on PATH; the venv step stops if it is not)."
                        ));
                        d.env_python = Some(p.to_string());
                        fw
                    }
                    (Some((p, _)), Some(env), _) => {
                        return Err(Refusal::new(format!(
                            "{why}: {} has Python {}. A new environment can have it: \
                             `gpu-doctor plan {} --env DIR --python {p}` with a DIR that does not \
                             exist yet",
                            env.path,
                            env.python.as_deref().unwrap_or("(unknown)"),
                            super::shell::flags(&Target {
                                env: None,
                                python: None,
                                ..target.clone()
                            })
                        )));
                    }
                    (Some((p, _)), None, Some(_)) => {
                        return Err(Refusal::new(format!("{why} (--python {p} would do)")));
                    }
                    (None, ..) => return Err(Refusal::new(why)),
                }
            }
        };
        needs.push(Need {
            cuda: fw.cuda.clone(),
            native: false,
            floor: fw.driver_floor.clone(),
            what: fw.label.clone(),
            requested: true,
            serves: d.request.clone().unwrap_or_default(),
        });
        d.framework = Some(fw);
    }
    if d.via != Via::Pip {
        let toolkit = match (&user_cuda, &d.framework) {
            (Some(c), _) => c.clone(),
            // A toolkit runs natively only: under a driver that stays, the newest of the
            // build's major that driver runs (the wheels themselves run through minor-version
            // compatibility).
            (None, Some(fw)) if fw.cuda_is_minor => match ceiling {
                Some(c) if &fw.cuda > c && fw.cuda.major() == c.major() => {
                    newest_in_major(m, ccs, as_of, Some(c), c.major())
                        .unwrap_or_else(|| fw.cuda.clone())
                }
                _ => fw.cuda.clone(),
            },
            (None, Some(fw)) => newest_in_major(m, ccs, as_of, ceiling, fw.cuda.major())
                .ok_or_else(|| {
                    Refusal::new(format!(
                        "no CUDA {}.x toolkit in the manifests serves compute capability {}",
                        fw.cuda.major(),
                        ccs.join(", ")
                    ))
                })?,
            (None, None) => {
                choose::newest_stable_cuda(&m.cuda, ccs, as_of, ceiling).ok_or_else(|| {
                    Refusal::new(format!(
                        "no CUDA release in the manifests serves compute capability {}",
                        ccs.join(", ")
                    ))
                })?
            }
        };
        if d.via == Via::Conda && toolkit.major() < 12 {
            return Err(Refusal::new(format!(
                "CUDA {toolkit} on conda means the monolithic cudatoolkit package or NVIDIA's \
                 per-release channel labels; gpu-doctor plans conda environments for CUDA 12.0 \
                 and newer (split packages pinned with cuda-version)"
            )));
        }
        let toolkit = if d.via == Via::Apt {
            carried_toolkit(m, d, ccs, ceiling, toolkit, user_cuda.is_some())?
        } else {
            toolkit
        };
        needs.push(Need {
            cuda: toolkit.clone(),
            native: true,
            floor: None,
            what: format!("the CUDA {toolkit} toolkit"),
            requested: true,
            serves: d.request.clone().unwrap_or_default(),
        });
        d.cudnn = Some(cudnn_plan(
            m,
            d.via,
            &toolkit,
            ccs,
            target,
            d.framework.as_ref(),
        )?);
        d.nccl = true;
        if d.via == Via::Apt
            && let Some(apt) = &d.apt
        {
            let ids: Vec<&str> = apt.repo_ids.iter().map(String::as_str).collect();
            let nccl = format!("-1+cuda{}", toolkit.major_minor());
            if let crate::manifest::Carried::No(why) =
                m.repos.lookup(&ids, "libnccl2", Some(&nccl), &[])
            {
                d.nccl = false;
                d.notes.push(format!(
                    "No NCCL step: NVIDIA's {} repository has no NCCL built for CUDA {toolkit} \
                     ({why}). pip frameworks bring their own NCCL.",
                    apt.distro
                ));
            }
            let cudnn = format!("libcudnn9-cuda-{}", toolkit.major());
            if d.cudnn.is_some()
                && let crate::manifest::Carried::No(why) = m.repos.lookup(&ids, &cudnn, None, &[])
            {
                d.cudnn = None;
                d.notes.push(format!(
                    "No cuDNN step: NVIDIA's {} repository has no {cudnn} ({why}).",
                    apt.distro
                ));
            }
        }
        d.toolkit = Some(toolkit);
    } else if target.cudnn.is_some() && d.framework.as_ref().is_some_and(|f| f.cudnn.is_none()) {
        d.notes.push(
            "--cudnn: pip wheels bring their own cuDNN, so the plan installs none".to_string(),
        );
    }
    if spec.is_some() || d.via == Via::Conda {
        d.env = Some(env_plan(machine, m, target, d, python)?);
    }
    Ok(())
}

/// The toolkit as NVIDIA's repository for the target release carries it (repos.toml). A
/// release it lacks is refused when asked for with `--cuda` (with the nearest it has and the
/// other ways to get that CUDA); one the plan chose itself gives way to the newest carried
/// release of the same major that serves these GPUs within `ceiling`.
fn carried_toolkit(
    m: &Manifests,
    d: &Decision<'_>,
    ccs: &[String],
    ceiling: Option<&Version>,
    toolkit: Version,
    asked: bool,
) -> Result<Version, Refusal> {
    let Some(apt) = &d.apt else {
        return Ok(toolkit);
    };
    let ids: Vec<&str> = apt.repo_ids.iter().map(String::as_str).collect();
    const PATTERN: &str = "cuda-toolkit-{major}-{minor}";
    let carries = |v: &Version| m.repos.carries_cuda(&ids, PATTERN, &v.major_minor());
    if carries(&toolkit) {
        return Ok(toolkit);
    }
    let mut series: Vec<Version> = m
        .cuda
        .releases
        .iter()
        .filter(|r| r.verified)
        .filter_map(|r| Version::parse(&Version::parse(&r.version)?.major_minor()))
        .collect();
    series.dedup();
    let carried: Vec<&Version> = series.iter().filter(|v| carries(v)).collect();
    let serves = |v: &Version| choose::cuda_refuses_gpus(&m.cuda, v, ccs).is_none();
    if !asked
        && let Some(v) = carried.iter().rev().find(|v| {
            v.major() == toolkit.major()
                && **v < &toolkit
                && serves(v)
                && ceiling.is_none_or(|c| **v <= c)
        })
    {
        return Ok((*v).clone());
    }
    let name = format!("cuda-toolkit-{}-{}", toolkit.major(), toolkit.minor());
    let why = match m.repos.lookup(&ids, &name, None, &[]) {
        crate::manifest::Carried::No(why) => why,
        crate::manifest::Carried::Yes(_) => String::new(),
    };
    let nearest = carried
        .iter()
        .filter(|v| serves(v))
        .min_by_key(|v| {
            let (a, b) = (
                v.major() * 100 + v.minor(),
                toolkit.major() * 100 + toolkit.minor(),
            );
            a.abs_diff(b)
        })
        .map(|v| {
            let branch = choose::lowest_branch_for(&m.cuda, v).map_or_else(String::new, |b| {
                format!(", which needs driver R{} or newer", b.branch)
            });
            format!(
                " The nearest it carries for these GPUs is cuda-toolkit-{}-{}{branch}.",
                v.major(),
                v.minor()
            )
        })
        .unwrap_or_else(|| " It carries no toolkit these GPUs can use.".to_string());
    let limit = ceiling.map_or_else(String::new, |c| {
        format!(" (the driver that stays runs CUDA up to {c})")
    });
    let conda = if toolkit.major() >= 12 {
        format!(
            " `--via conda --cuda {}` (conda-forge's cuda-version),",
            toolkit.major_minor()
        )
    } else {
        String::new()
    };
    Err(Refusal::new(format!(
        "NVIDIA's {} repository has no {name}{limit}: {why}.{nearest} Other ways to CUDA {}:{conda} \
         `--via pip --framework ...` (the framework's wheels bring their own CUDA libraries), or \
         a release whose repository has it (`--os`).",
        apt.distro,
        toolkit.major_minor()
    )))
}

/// A `--cuda` value checked against the manifests and the GPUs.
fn checked_cuda(m: &Manifests, text: &str, ccs: &[String]) -> Result<Version, Refusal> {
    let parsed = Version::parse(text).ok_or_else(|| Refusal::new(format!("--cuda {text}")))?;
    let minor = Version::parse(&parsed.major_minor())
        .ok_or_else(|| Refusal::new(format!("--cuda {text}")))?;
    let Some(release) = m.cuda.release(&minor.major_minor()).filter(|r| {
        Version::parse(&r.version).is_some_and(|v| v.major_minor() == minor.major_minor())
    }) else {
        let series: Vec<String> = m
            .cuda
            .releases
            .iter()
            .filter_map(|r| Version::parse(&r.version).map(|v| v.major_minor()))
            .fold(Vec::new(), |mut acc, s| {
                if !acc.contains(&s) {
                    acc.push(s);
                }
                acc
            });
        return Err(Refusal::new(format!(
            "CUDA {text} is not a CUDA release (the manifests list {})",
            series.join(", ")
        )));
    };
    if !release.verified {
        return Err(Refusal::new(format!(
            "CUDA {} is in the manifests only as an unverified row (its driver is not known), \
             so no plan can be made for it",
            release.version
        )));
    }
    if let Some(why) = choose::cuda_refuses_gpus(&m.cuda, &minor, ccs) {
        return Err(Refusal::new(format!(
            "CUDA {minor} cannot work here: {why}"
        )));
    }
    Ok(minor)
}

/// The newest stable CUDA of one major for these GPUs.
fn newest_in_major(
    m: &Manifests,
    ccs: &[String],
    as_of: &str,
    ceiling: Option<&Version>,
    major: u64,
) -> Option<Version> {
    let top = format!("{major}.999");
    let cap = match ceiling {
        Some(c) if c.major() == major => c.clone(),
        Some(c) if c.major() < major => return None,
        _ => Version::parse(&top)?,
    };
    choose::newest_stable_cuda(&m.cuda, ccs, as_of, Some(&cap))
        .filter(|v| v.major() == major)
        .filter(|v| ceiling.is_some() || choose::auto_branch(&m.cuda, v, ccs, as_of).is_ok())
}

/// cuDNN: the major asked for (or the framework's, or 9), pinned to the last release line that
/// still serves these GPUs and this CUDA when newer ones dropped them.
fn cudnn_plan(
    m: &Manifests,
    via: Via,
    cuda: &Version,
    ccs: &[String],
    target: &Target,
    framework: Option<&FrameworkPlan>,
) -> Result<CudnnPlan, Refusal> {
    let major = target
        .cudnn
        .or_else(|| framework.and_then(|f| f.cudnn))
        .unwrap_or(9);
    if via == Via::Apt && major != 9 {
        return Err(Refusal::new(format!(
            "apt plans install cuDNN 9 (libcudnn9-cuda-{}); cuDNN {major} packages need an exact \
             version and CUDA pin that the manifests do not record",
            cuda.major()
        )));
    }
    if m.cudnn.soname(major).is_none() {
        return Err(Refusal::new(format!(
            "cuDNN {major} is not a cuDNN major the manifests know"
        )));
    }
    Ok(CudnnPlan {
        major,
        pin: choose::cudnn_pin(&m.cudnn, major, cuda, ccs),
    })
}

/// The environment a framework (or a conda CUDA stack) goes into: `--env`, else the one that
/// already holds the framework, else `./.venv` (pip) or a name after the stack (conda).
fn env_plan(
    machine: &Machine,
    m: &Manifests,
    target: &Target,
    d: &Decision<'_>,
    python: Option<String>,
) -> Result<EnvPlan, Refusal> {
    // Without a framework, the newest Python the newest PyTorch supports, so one fits later.
    let python = d
        .env_python
        .clone()
        .or(python)
        .or_else(|| d.framework.as_ref().and_then(|f| f.python_default.clone()))
        .or_else(|| {
            m.frameworks
                .torch
                .iter()
                .rev()
                .find_map(|r| r.python_max.clone())
        });
    match d.via {
        Via::Conda => {
            let name = target.env.clone().unwrap_or_else(|| match &d.framework {
                Some(fw) => fw.name.as_str().to_string(),
                None => d
                    .toolkit
                    .as_ref()
                    .map_or_else(|| "cuda".to_string(), |t| format!("cuda-{t}")),
            });
            let python = python.ok_or_else(|| {
                Refusal::new(
                    "no Python version to create the conda environment with: pass --python",
                )
            })?;
            Ok(EnvPlan::Conda { name, python })
        }
        Via::Apt | Via::Pip => {
            let path =
                default_env(machine, target).map_or_else(|| ".venv".to_string(), |(path, _)| path);
            let python = target
                .python
                .as_ref()
                .or(d.env_python.as_ref())
                .map_or_else(|| "python3".to_string(), |p| format!("python{p}"));
            Ok(EnvPlan::Venv { path, python })
        }
    }
}

/// `--env`, else the one virtual or conda environment that already holds the framework.
fn default_env(machine: &Machine, target: &Target) -> Option<(String, String)> {
    if let Some(env) = &target.env {
        return Some((env.clone(), String::new()));
    }
    let name = target.framework.as_ref()?.name;
    let mut envs: Vec<&InstalledFramework> = machine
        .frameworks
        .iter()
        .filter(|f| f.name == name && f.env_kind == "venv")
        .collect();
    envs.dedup_by(|a, b| a.env == b.env);
    match envs.as_slice() {
        [one] => Some((one.env.clone(), one.env_kind.clone())),
        _ => None,
    }
}

/// Keep the working driver, install a branch, or say where the driver has to come from.
///
/// `keep_request`: a request made without `--driver` on a machine whose driver works: what
/// was asked must run on that driver (else a refusal naming the branch `--driver auto` would
/// install), and what is already installed is not this plan's business. Also says what the
/// driver change serves (finding ids, or the request).
#[expect(
    clippy::too_many_arguments,
    reason = "one call site; each is one fact the choice depends on"
)]
fn decide_driver<'m>(
    machine: &Machine,
    m: &'m Manifests,
    d: &Decision<'m>,
    named: Option<&'m DriverBranch>,
    working: Option<&DriverCap>,
    needs: &[Need],
    as_of: &str,
    keep_request: bool,
) -> Result<(DriverPlan<'m>, Vec<String>), Refusal> {
    let unmet: Vec<&Need> = match working {
        Some(cap) => needs
            .iter()
            .filter(|n| !n.met_by(m, cap))
            .filter(|n| !keep_request || n.requested)
            .collect(),
        None => needs.iter().collect(),
    };
    let working_branch = working.map(|c| c.version.major());
    if let (Some(row), Some(branch)) = (named, working_branch) {
        if row.branch == branch {
            return keep_or_refuse(&unmet, row.branch).map(|p| (p, Vec::new()));
        }
        if row.branch < branch {
            return Err(Refusal::new(format!(
                "--driver {} would downgrade the working {} driver; plans never downgrade a \
                 driver (remove it first if you must)",
                row.branch,
                machine.driver_version.as_deref().unwrap_or("")
            )));
        }
    }
    // The newest GPU's first driver release: no branch before it knows that GPU.
    let floor = machine.newest_first_driver();
    let floor_branch = floor.as_ref().map(|(v, _)| v.major());
    let gpu_unknown_to_driver = floor
        .as_ref()
        .zip(working)
        .is_some_and(|((first, _), cap)| !cap.planned && &cap.version < first);
    if let (Some(row), Some((first, gpu))) = (named, &floor)
        && row.branch < first.major()
    {
        return Err(Refusal::new(format!(
            "--driver {} predates {}: NVIDIA's drivers list it from {first} on (R{} or newer)",
            row.branch,
            gpu.name.as_deref().unwrap_or("this GPU"),
            first.major()
        )));
    }
    let change = named.is_some() || working.is_none() || !unmet.is_empty() || gpu_unknown_to_driver;
    if !change {
        return Ok((DriverPlan::Keep, Vec::new()));
    }
    let mut serves: Vec<String> = Vec::new();
    if working.is_none() {
        for id in ["no-driver", "nouveau-loaded", "driver-too-old-for-gpu"] {
            if machine.finding(id).is_some() {
                push_unique(&mut serves, id);
            }
        }
    }
    if gpu_unknown_to_driver {
        push_unique(&mut serves, "driver-too-old-for-gpu");
    }
    for need in &unmet {
        if !need.serves.is_empty() {
            push_unique(&mut serves, &need.serves);
        }
    }
    if named.is_some()
        && let Some(request) = &d.request
    {
        push_unique(&mut serves, request);
    }
    let hardest = unmet
        .iter()
        .filter(|n| n.native)
        .map(|n| n.cuda.clone())
        .chain(unmet.iter().filter(|n| !n.native).map(|n| n.cuda.clone()))
        .max();
    let row = match named {
        Some(row) => {
            if let Some(cap) = DriverCap::planned(row)
                && let Some(need) = needs.iter().find(|n| !n.met_by(m, &cap))
            {
                return Err(Refusal::new(format!(
                    "--driver {} cannot run {} (CUDA {}): R{} runs CUDA up to {}",
                    row.branch, need.what, need.cuda, row.branch, row.max_cuda
                )));
            }
            row
        }
        None => {
            let cuda =
                match hardest {
                    Some(c) => c,
                    None => choose::newest_stable_cuda(&m.cuda, &d.ccs, as_of, None).ok_or_else(
                        || Refusal::new("no CUDA release in the manifests serves these GPUs"),
                    )?,
                };
            let mut row = match choose::auto_branch(&m.cuda, &cuda, &d.ccs, as_of) {
                Ok(row) => row,
                // Wheels run through minor-version compatibility: a branch that does not run
                // their CUDA natively can still run them (Kepler's R470 and cu118 wheels). The
                // newest such branch these GPUs still have, supported or their last.
                Err(why) => {
                    let last = choose::last_branch(&m.cuda, &d.ccs);
                    m.cuda
                        .driver_branches
                        .iter()
                        .rev()
                        .filter(|b| b.verified && last.is_none_or(|l| b.branch <= l))
                        .filter(|b| choose::in_support(&m.cuda, b, as_of) || Some(b.branch) == last)
                        .find(|b| {
                            DriverCap::planned(b)
                                .is_some_and(|c| needs.iter().all(|n| n.met_by(m, &c)))
                        })
                        .ok_or_else(|| Refusal::new(why))?
                }
            };
            // A GPU newer than the branch (an RTX 5090 on R550): the lowest supported branch
            // that knows it, designated ones first, as auto_branch prefers.
            if let Some(first) = floor_branch
                && row.branch < first
            {
                let last = choose::last_branch(&m.cuda, &d.ccs);
                let fits: Vec<&DriverBranch> = m
                    .cuda
                    .driver_branches
                    .iter()
                    .filter(|b| b.verified && b.branch >= first)
                    .filter(|b| last.is_none_or(|last| b.branch <= last))
                    .filter(|b| choose::in_support(&m.cuda, b, as_of))
                    .collect();
                row = fits
                    .iter()
                    .find(|b| b.designation.is_some())
                    .or_else(|| fits.first())
                    .copied()
                    .ok_or_else(|| {
                        Refusal::new(format!(
                            "no supported driver branch from R{first} on (the first that knows \
                             these GPUs) is in the manifests"
                        ))
                    })?;
            }
            // A framework's own floor (JAX's R580 for CUDA 13) can sit above the branch.
            if let Some(cap) = DriverCap::planned(row)
                && needs.iter().any(|n| !n.met_by(m, &cap))
            {
                row = m
                    .cuda
                    .driver_branches
                    .iter()
                    .filter(|b| b.branch > row.branch && choose::in_support(&m.cuda, b, as_of))
                    .find(|b| {
                        DriverCap::planned(b).is_some_and(|c| needs.iter().all(|n| n.met_by(m, &c)))
                    })
                    .ok_or_else(|| {
                        Refusal::new("no supported driver branch runs everything the plan installs")
                    })?;
            }
            row
        }
    };
    let why = if let (true, Some((first, gpu))) = (gpu_unknown_to_driver, &floor) {
        format!(
            "the working driver {} predates {} (NVIDIA's drivers list it from {first} on)",
            machine.driver_version.as_deref().unwrap_or(""),
            gpu.name.as_deref().unwrap_or("this GPU")
        )
    } else if working.is_none() {
        if machine.nouveau_loaded {
            "no NVIDIA driver is loaded (nouveau holds the GPU)".to_string()
        } else {
            "no NVIDIA driver is loaded".to_string()
        }
    } else if let Some(need) = unmet.first() {
        format!(
            "the working driver {} runs CUDA up to {}, and {} needs CUDA {}",
            machine.driver_version.as_deref().unwrap_or(""),
            machine.driver_cuda.as_deref().unwrap_or("?"),
            need.what,
            need.cuda
        )
    } else {
        format!("--driver {} was asked for", row.branch)
    };
    if keep_request
        && !gpu_unknown_to_driver
        && machine.driver_fixed().is_none()
        && let (Some(cap), Some(need)) = (working, unmet.first())
    {
        let floor = need
            .floor
            .as_ref()
            .map_or_else(String::new, |f| format!(" and driver {f} or newer"));
        return Err(Refusal::new(format!(
            "{} needs CUDA {}{floor}, and the working driver {} runs CUDA up to {}. Plans keep \
             a working driver unless asked: `gpu-doctor plan {} --driver auto` plans the upgrade \
             to R{} (and a reboot); leave out the version, extra or --cuda that asks for more, \
             and the plan picks what this driver runs.",
            need.what,
            need.cuda,
            cap.version,
            cap.max_cuda,
            d.request
                .as_deref()
                .and_then(|r| r.strip_prefix("request: "))
                .unwrap_or_default(),
            row.branch
        )));
    }
    if let Some(reason) = machine.driver_fixed() {
        return Ok((
            DriverPlan::Elsewhere {
                needed: format!("R{} or newer", row.branch),
                reason: format!("{why}; {reason}"),
            },
            serves,
        ));
    }
    if d.apt.is_none() {
        return Ok((
            DriverPlan::Elsewhere {
                needed: format!("R{} or newer", row.branch),
                reason: format!(
                    "{why}; this plan has apt steps only for Ubuntu 22.04 and 24.04: install it \
                     by NVIDIA's driver installation guide for this system"
                ),
            },
            serves,
        ));
    }
    let (open, flavour_why) = flavour(machine, m, &d.ccs, row.branch)?;
    if let Some(apt) = &d.apt {
        let ids = [apt.nvidia_repo.as_str()];
        for package in super::apt::driver_packages(m, row.branch, open).unwrap_or_default() {
            if let crate::manifest::Carried::No(why) = m.repos.lookup(&ids, &package, None, &[]) {
                return Err(Refusal::new(format!(
                    "driver R{} for {}: NVIDIA's {} repository has no {package} ({why})",
                    row.branch, apt.os, apt.distro
                )));
            }
        }
    }
    Ok((
        DriverPlan::Install {
            row,
            open,
            replaces: machine.working_driver().map(|v| v.as_str().to_string()),
            why,
            flavour_why,
        },
        serves,
    ))
}

/// The kernel-module flavour for these GPUs on `branch`, and why (install.toml driver_flavor,
/// from NVIDIA's driver installation guide): open where NVIDIA supports the GPU only with them
/// (Blackwell, Grace Hopper); proprietary where the open ones cannot drive it (before Turing);
/// otherwise the installed driver's flavour, which drives these GPUs, and with no driver the
/// branch's default (open from R560 on).
///
/// # Errors
/// GPUs that need different flavours (a Blackwell next to a Pascal): one driver cannot serve
/// both.
pub(super) fn flavour(
    machine: &Machine,
    m: &Manifests,
    ccs: &[String],
    branch: u64,
) -> Result<(bool, String), Refusal> {
    let row = m.install.driver_flavor("open");
    let min = row.and_then(|f| f.min_sm.as_deref()).unwrap_or("7.5");
    let from = row.and_then(|f| f.required_from_sm.as_deref());
    let names = row
        .map(|f| f.required_for_names.as_slice())
        .unwrap_or_default();
    let takes_open = open_modules(m, ccs);
    let needs_open = machine.gpus.iter().find(|g| {
        let by_cc = from
            .zip(g.compute_capability.as_deref())
            .is_some_and(|(from, cc)| crate::version::compare(cc, from).is_ge());
        let by_name = g
            .name
            .as_deref()
            .is_some_and(|n| names.iter().any(|w| n.contains(w.as_str())));
        by_cc || by_name
    });
    let source = "install.toml driver_flavor; NVIDIA driver installation guide, kernel modules";
    if let Some(gpu) = needs_open {
        let name = gpu.name.as_deref().unwrap_or("this GPU");
        if !takes_open {
            return Err(Refusal::new(format!(
                "{name} is supported only with NVIDIA's open kernel modules, and another GPU here \
                 (compute capability below {min}) only with the proprietary ones: one driver \
                 cannot load both ({source})"
            )));
        }
        let replacing = match (machine.working_driver(), machine.driver_open) {
            (Some(_), Some(false)) => {
                " The working driver uses the proprietary modules, which cannot drive it: this \
                 switches flavour."
            }
            _ => "",
        };
        return Ok((
            true,
            format!(
                "open kernel modules: NVIDIA supports {name} only with them ({source}).{replacing}"
            ),
        ));
    }
    if !takes_open {
        return Ok((
            false,
            format!(
                "proprietary kernel modules: the open ones drive compute capability {min} \
                 (Turing) and newer only, and a GPU here is older ({source})"
            ),
        ));
    }
    if machine.working_driver().is_some()
        && let Some(open) = machine.driver_open
    {
        let which = if open { "open" } else { "proprietary" };
        return Ok((
            open,
            format!(
                "{which} kernel modules, as the working driver has: they drive these GPUs, and \
                 switching flavours is a change of its own ({source})"
            ),
        ));
    }
    let since = row.and_then(|f| f.default_since_branch).unwrap_or(560);
    Ok(if branch >= since {
        (
            true,
            format!(
                "open kernel modules: every GPU here is compute capability {min} or newer, and \
                 they are the default from R{since} on ({source})"
            ),
        )
    } else {
        (
            false,
            format!(
                "proprietary kernel modules, the default of branches before R{since} ({source})"
            ),
        )
    })
}

fn keep_or_refuse<'m>(unmet: &[&Need], branch: u64) -> Result<DriverPlan<'m>, Refusal> {
    match unmet.first() {
        None => Ok(DriverPlan::Keep),
        Some(need) => Err(Refusal::new(format!(
            "--driver {branch} is the working branch, but it cannot run {} (CUDA {})",
            need.what, need.cuda
        ))),
    }
}

/// Open kernel modules when every GPU is at or above the open flavour's lowest compute
/// capability (Turing; install.toml driver_flavor), else the proprietary ones.
#[must_use]
pub(super) fn open_modules(m: &Manifests, ccs: &[String]) -> bool {
    let Some(min) = m
        .install
        .driver_flavor("open")
        .and_then(|f| f.min_sm.as_deref())
        .and_then(Version::parse)
    else {
        return false;
    };
    ccs.iter()
        .filter_map(|cc| Version::parse(cc))
        .all(|cc| cc >= min)
}

#[cfg(test)]
mod tests;
